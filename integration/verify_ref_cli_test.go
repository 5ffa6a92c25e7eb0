package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestRunVerifyByReference: `run --op verify --artifact CERT
// --artifact-by-ref` stores the certificate in the home's store and the
// job names it by reference (jailed worker, real cgroups): accepted with
// the certificate's digest, stored once for two jobs. Fails on main:
// unknown flag --artifact-by-ref (and artifact_ref unknown to the spec).
func TestRunVerifyByReference(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	prog := filepath.Join(repoRoot, "examples", "add.nox")
	env := cliJSON(t, 0, runArgs(home, prog, "--op", "prove", "--input-values", "3,5", "--job-id", "p")...)
	var proved struct {
		Path string `json:"certificate_path"`
	}
	if err := json.Unmarshal(env.Result, &proved); err != nil || proved.Path == "" {
		t.Fatalf("prove result %s (%v)", env.Result, err)
	}
	for _, id := range []string{"v1", "v2"} {
		env := cliJSON(t, 0, runArgs(home, prog, "--op", "verify", "--input-values", "3,5", "--expect", "8",
			"--artifact", proved.Path, "--artifact-by-ref", "--job-id", id)...)
		var res struct {
			Verification struct {
				Digest string `json:"artifact_sha256"`
			} `json:"verification"`
		}
		if err := json.Unmarshal(env.Result, &res); err != nil || res.Verification.Digest == "" {
			t.Fatalf("%s: result %s (%v)", id, env.Result, err)
		}
		ents, err := os.ReadDir(filepath.Join(home, "certificates"))
		if err != nil || len(ents) != 1 || ents[0].Name() != res.Verification.Digest {
			t.Fatalf("%s: store holds %v (%v), want one file named %s", id, ents, err, res.Verification.Digest)
		}
	}
}
