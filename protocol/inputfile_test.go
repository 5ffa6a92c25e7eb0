package protocol

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestParseInputFile(t *testing.T) {
	good := map[string][]uint64{
		`{"schema_version":1,"public":["7"],"secret":[]}`:                            {7},
		`{"secret":[],"public":[7,"8",0,"18446744069414584320"],"schema_version":1}`: {7, 8, 0, 18446744069414584320},
		`{"schema_version":1,"public":[],"secret":[]}`:                               {},
	}
	for in, want := range good {
		got, err := ParseInputFile([]byte(in))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	cases := []struct {
		in    string
		code  Code
		inMsg string
	}{
		{`{"schema_version":1,"public":["7"],"secret":["35"]}`, CodeUnsupportedSecret, "$.secret"},
		{`{"schema_version":1,"public":[],"secret":[35]}`, CodeUnsupportedSecret, ""},
		{`{"schema_version":1,"public":["7"]}`, CodeInvalidJob, "$.secret: required"},
		{`{"schema_version":1,"secret":[]}`, CodeInvalidJob, "$.public: required"},
		{`{"public":[],"secret":[]}`, CodeInvalidJob, "$.schema_version: required"},
		{`{"schema_version":2,"public":[],"secret":[]}`, CodeInvalidJob, "$.schema_version"},
		{`{"schema_version":"1","public":[],"secret":[]}`, CodeInvalidJob, "$.schema_version"},
		{`{"schema_version":1.0,"public":[],"secret":[]}`, CodeInvalidJob, "$.schema_version"},
		{`{"schema_version":1,"public":[],"secret":[],"extra":1}`, CodeInvalidJob, "$.extra: unknown key"},
		{`{"schema_version":1,"public":[],"public":[],"secret":[]}`, CodeInvalidJob, "$.public: duplicate key"},
		{`{"schema_version":1,"public":["01"],"secret":[]}`, CodeInvalidJob, "$.public[0]"},
		{`{"schema_version":1,"public":[-1],"secret":[]}`, CodeInvalidJob, "$.public[0]"},
		{`{"schema_version":1,"public":[1.5],"secret":[]}`, CodeInvalidJob, "$.public[0]"},
		{`{"schema_version":1,"public":[1e3],"secret":[]}`, CodeInvalidJob, "$.public[0]"},
		{`{"schema_version":1,"public":[18446744069414584321],"secret":[]}`, CodeInvalidJob, "below p"},
		{`{"schema_version":1,"public":["18446744069414584321"],"secret":[]}`, CodeInvalidJob, "below p"},
		{`{"schema_version":1,"public":[18446744073709551616],"secret":[]}`, CodeInvalidJob, "$.public[0]"},
		{`{"schema_version":1,"public":[true],"secret":[]}`, CodeInvalidJob, "$.public[0]"},
		{`{"schema_version":1,"public":{},"secret":[]}`, CodeInvalidJob, "$.public: must be an array"},
		{`[]`, CodeInvalidJob, "must be an object"},
	}
	for _, c := range cases {
		_, err := ParseInputFile([]byte(c.in))
		wantCode(t, err, c.code, c.inMsg)
		// Diagnostics never echo values.
		if strings.Contains(err.Error(), "35") || strings.Contains(err.Error(), "18446744069414584321") {
			t.Errorf("%s: message echoes a value: %v", c.in, err)
		}
	}
	words := `{"schema_version":1,"public":[` + strings.TrimSuffix(strings.Repeat("0,", 40000), ",") +
		`],"secret":[` + strings.TrimSuffix(strings.Repeat("0,", 30000), ",") + `]}`
	_, err := ParseInputFile([]byte(words))
	wantCode(t, err, CodeInvalidJob, "70000 words, at most 65536")
	_, err = ParseInputFile([]byte(strings.Repeat(" ", MaxInputFileBytes+1)))
	wantCode(t, err, CodeInvalidJob, "at most")
}

func TestReadInputFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "in.json")
	if err := os.WriteFile(good, []byte(`{"schema_version":1,"public":["7"],"secret":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadInputFile(good); err != nil || len(v) != 1 || v[0] != 7 {
		t.Fatalf("%v %v", v, err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	_, err := ReadInputFile(link)
	wantCode(t, err, CodeInvalidJob, "symlink")
	_, err = ReadInputFile(dir)
	wantCode(t, err, CodeInvalidJob, "not a regular file")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ReadInputFile(fifo)
	wantCode(t, err, CodeInvalidJob, "not a regular file")
	_, err = ReadInputFile(filepath.Join(dir, "missing"))
	wantCode(t, err, CodeInvalidJob, "does not exist")
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxInputFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ReadInputFile(big)
	wantCode(t, err, CodeInvalidJob, "at most")
}
