package protocol

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestEnvelope(t *testing.T) {
	var buf bytes.Buffer
	code, err := WriteEnvelope(&buf, "run", testResult(), nil)
	if err != nil || code != 0 {
		t.Fatalf("%d %v", code, err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, `{"schema":"cyber/cli/v1","command":"run","ok":true,"result":{"contract":"cyber/worker/v1",`) ||
		!strings.HasSuffix(out, `,"error":null}`+"\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("envelope: %s", out)
	}
	cases := []struct {
		err  error
		code int
		want string
	}{
		{Errorf(CodeUnsupportedSecret, "no secrets"), 3, `"error":{"code":"unsupported_secret","message":"no secrets","retryable":false}}`},
		{Errorf(CodeCancelled, "by user"), 130, `"code":"cancelled"`},
		{Errorf(CodeClaimMismatch, "output differs"), 5, `"code":"claim_mismatch"`},
		{errors.New("leaky /etc/shadow"), 1, `"message":"internal error","retryable":true}`},
	}
	for _, c := range cases {
		buf.Reset()
		code, err := WriteEnvelope(&buf, "verify", testResult(), c.err)
		if err != nil || code != c.code {
			t.Fatalf("%v: code %d err %v", c.err, code, err)
		}
		out := buf.String()
		if !strings.Contains(out, `"ok":false,"result":null,`) || !strings.Contains(out, c.want) || strings.Contains(out, "shadow") {
			t.Fatalf("envelope: %s", out)
		}
	}
	env := NewEnvelope("describe", func() {}, nil)
	if env.OK || env.Error.Code != CodeInternalError || env.ExitCode() != 1 {
		t.Fatalf("unencodable result: %+v", env)
	}
}
