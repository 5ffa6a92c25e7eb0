package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// A certificate longer than verify passes inline is fed to the worker
// from its file, by reference, and checked exactly as an inline one;
// --artifact-limit bounds what prove writes and what verify reads, and
// the feed's work directory does not outlive the command. Fails before:
// verify read the file whole, at most 32 MiB, and neither command took
// --artifact-limit (a 1e8 hash chain could be neither proved nor
// verified).
func TestLongCertificatesByReference(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	saved := inlineCertificateBytes
	inlineCertificateBytes = 64
	t.Cleanup(func() { inlineCertificateBytes = saved })

	dir := t.TempDir()
	certPath := filepath.Join(dir, "chain.cnxt.zst")
	chain := examplePath("hashchain.nox")
	env := cliJSON(t, exitOK, "prove", chain, "--input-values", "3,7", "--output", certPath, "--format", "json")
	var p map[string]any
	unmarshal(t, env.Result, &p)
	info, err := os.Stat(certPath)
	if err != nil || info.Size() <= inlineCertificateBytes {
		t.Fatalf("certificate %v, %v: want one over %d bytes", info, err, inlineCertificateBytes)
	}
	proved := p["artifact"].(map[string]any)

	env = cliJSON(t, exitOK, "verify", certPath, "--program", chain, "--input-values", "3,7",
		"--claim", strings.Join(stringsOf(p["output"]), ","), "--format", "json")
	var v map[string]any
	unmarshal(t, env.Result, &v)
	art := v["artifact"].(map[string]any)
	if art["sha256"] != proved["sha256"] || art["size"] != proved["size"] || v["claim_checked"] != true {
		t.Fatalf("verify by reference: %s", env.Result)
	}

	// The same rejections as inline.
	env = cliJSON(t, exitRejected, "verify", certPath, "--claim", "1", "--format", "json")
	if env.Error.Code != protocol.CodeClaimMismatch {
		t.Fatalf("claim: %+v", env.Error)
	}
	b, _ := os.ReadFile(certPath)
	b[len(b)/2] ^= 1
	bad := writeFile(t, dir, "bad.cnxt.zst", string(b))
	if env = cliJSON(t, exitRejected, "verify", bad, "--format", "json"); env.Error.Code != protocol.CodeProofRejected {
		t.Fatalf("tampered: %+v", env.Error)
	}

	// --artifact-limit on both sides.
	tooLarge := protocol.ExitCode(protocol.CodeArtifactTooLarge)
	limit := proved["size"].(string)
	if env = cliJSON(t, exitOK, "verify", certPath, "--artifact-limit", limit, "--format", "json"); !env.OK {
		t.Fatalf("verify at exactly its size: %+v", env.Error)
	}
	smaller := decimalString(uint64(info.Size()) - 1)
	if env = cliJSON(t, tooLarge, "verify", certPath, "--artifact-limit", smaller, "--format", "json"); env.Error.Code != protocol.CodeArtifactTooLarge {
		t.Fatalf("verify over the limit: %+v", env.Error)
	}
	out := filepath.Join(dir, "short.cnxt.zst")
	if env = cliJSON(t, tooLarge, "prove", chain, "--input-values", "3,7", "--output", out, "--artifact-limit", smaller, "--format", "json"); env.Error.Code != protocol.CodeArtifactTooLarge {
		t.Fatalf("prove over the limit: %+v", env.Error)
	}
	if names := dirNames(t, dir); len(names) != 2 {
		t.Fatalf("a refused prove left %v", names)
	}
	for _, bad := range []string{"0", "1.5MiB", "65GiB", "x"} {
		for _, cmd := range []string{"prove", "verify"} {
			args := []string{cmd, certPath, "--artifact-limit", bad, "--format", "json"}
			if cmd == "prove" {
				args = []string{cmd, chain, "--output", out, "--artifact-limit", bad, "--format", "json"}
			}
			if env = cliJSON(t, exitUsage, args...); env.Error.Code != protocol.CodeInvalidJob || !strings.Contains(env.Error.Message, "artifact-limit") {
				t.Errorf("%s --artifact-limit %s: %+v", cmd, bad, env.Error)
			}
		}
	}
	if names := dirNames(t, tmp); len(names) != 0 {
		t.Fatalf("verify left %v in its TMPDIR", names)
	}
}

// stringsOf is a JSON array of strings as a slice.
func stringsOf(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}
