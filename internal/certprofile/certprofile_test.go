package certprofile

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// TestMaxEncodedV2: the v2 bound is the header and trailer and 47 bytes
// a reduction (cert.MaxEncodedV2For), with no fixed cap below MaxInt64
// (v1's stops at 256 MiB), and saturates instead of wrapping.
func TestMaxEncodedV2(t *testing.T) {
	fixed := uint64(cert.MaxStatementBytes + cert.MaxTrailerBytes)
	for _, c := range []struct{ budget, want uint64 }{
		{0, fixed},
		{1, fixed + 47},
		{1e10, fixed + 47e10},
		{math.MaxInt64 / 47, math.MaxInt64},
		{math.MaxUint64, math.MaxInt64},
	} {
		if got := MaxEncodedV2(c.budget); got != c.want {
			t.Errorf("MaxEncodedV2(%d) = %d, want %d", c.budget, got, c.want)
		}
	}
	if cert.MaxEncodedFor(1e10) >= MaxEncodedV2(1e10) {
		t.Fatal("v2's bound is not above v1's cap")
	}
}

// frame is content compressed as a streamed (unsized) frame.
func frame(t *testing.T, content []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	c, err := artifacts.NewCompressor(&b)
	if err != nil {
		t.Fatal(err)
	}
	for len(content) > 0 { // in pieces: the frame then declares no size
		n := min(len(content), 1000)
		c.Write(content[:n])
		content = content[n:]
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestOpenAndDetect: Detect names the profile a certificate's magic
// names; Open passes a certificate of the job's profile through whole,
// refuses the other profile's magic with ErrMismatch before passing on a
// byte, and leaves other first bytes (and content too short for a magic)
// to the verifier; a v1 job refuses a frame without a declared size.
func TestOpenAndDetect(t *testing.T) {
	body := bytes.Repeat([]byte("witness "), 20000) // past the first block: no declared size
	v1 := artifacts.Compress(nil, append([]byte(cert.Magic), body...))
	v2 := frame(t, append([]byte(cert.MagicV2), body...))
	other := artifacts.Compress(nil, append([]byte("CYNXTRC9"), body...))
	for name, c := range map[string]struct {
		file []byte
		want string
	}{"v1": {v1, protocol.ProfilePublicTrace}, "v2": {v2, protocol.ProfilePublicTraceV2}} {
		if p, err := Detect(c.file); err != nil || p != c.want {
			t.Errorf("Detect %s: %q, %v", name, p, err)
		}
		cf, err := Open(c.want, c.file, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(cf)
		cf.Close()
		if err != nil || !bytes.Equal(got[len(cert.Magic):], body) {
			t.Errorf("Open %s: %d bytes, %v", name, len(got), err)
		}
	}
	if _, err := Detect(other); err == nil {
		t.Error("Detect took an unknown magic")
	}
	for _, c := range []struct {
		profile string
		file    []byte
	}{{protocol.ProfilePublicTraceV2, v1}, {protocol.ProfilePublicTrace, artifacts.Compress(nil, append([]byte(cert.MagicV2), body...))}} {
		cf, err := Open(c.profile, c.file, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		n, err := cf.Read(make([]byte, 100))
		cf.Close()
		if n != 0 || !errors.Is(err, cert.ErrMismatch) {
			t.Errorf("%s job, the other's magic: %d bytes, %v", c.profile, n, err)
		}
	}
	for _, content := range [][]byte{append([]byte("CYNXTRC9"), body...), []byte("CYN")} {
		cf, err := Open(protocol.ProfilePublicTrace, artifacts.Compress(nil, content), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(cf)
		cf.Close()
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("other first bytes %q...: %d bytes, %v", content[:3], len(got), err)
		}
	}
	if _, err := Open(protocol.ProfilePublicTrace, v2, 1<<20); !errors.Is(err, artifacts.ErrCorrupt) {
		t.Errorf("a v1 job, an unsized frame: %v", err)
	}
	if cf, err := Open(protocol.ProfilePublicTraceV2, v2, 1000); err == nil {
		_, err = io.ReadAll(cf)
		if !errors.Is(err, artifacts.ErrTooLarge) {
			t.Errorf("a v2 certificate over its limit: %v", err)
		}
	}
}
