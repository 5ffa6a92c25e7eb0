package integration

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// TestProveLongJobInBoundedMemory (issue 30): a prove job of 201,326,578
// reductions (the corpus's spin loop at 23) under --memory 128MiB is
// proved by a jailed worker, its v2 certificate streamed to its artifact
// file, and verified by the supervisor streamed, end to end through a
// one-shot run of the built binaries; the job is accepted with the
// run's output and reductions. On main it fails: the v1 certificate
// (about 200 MB uncompressed, held whole) crosses its bound of the
// memory limit and 64 MiB (artifact_too_large), and a prover that held
// it would cross the memory limit itself. It takes tens of seconds (a
// full-tier test: not under -short).
func TestProveLongJobInBoundedMemory(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	prog := filepath.Join(repoRoot, "noxrunner", "cert", "testdata", "corpus", "spin.nox")
	res := proveJailed(t, home, prog, "23", "128MiB", "--job-id", "long")
	if res.Profile != protocol.ProfilePublicTraceV2 || res.Kind != string(protocol.KindExecutionCertificate) ||
		len(res.Output) != 1 || res.Output[0] != "0" || res.Reductions != "201326578" || res.Path == "" {
		t.Fatalf("result %s", res.raw)
	}
	t.Logf("201,326,578 reductions proved under 128 MiB: certificate %s bytes compressed; worker wall %s ms, CPU %s ms, peak %s bytes",
		res.Artifact.Size, res.Telemetry.Wall, res.Telemetry.CPU, res.Telemetry.Peak)
}

// provedJob is what a one-shot prove's JSON result says of its job.
type provedJob struct {
	Profile    string   `json:"profile"`
	Kind       string   `json:"kind"`
	Output     []string `json:"output"`
	Reductions string   `json:"reductions"`
	Path       string   `json:"certificate_path"`
	Artifact   struct {
		Size string `json:"size"`
	} `json:"artifact"`
	Telemetry struct {
		Wall string `json:"wall_time_ms"`
		CPU  string `json:"cpu_time_ms"`
		Peak string `json:"peak_memory_bytes"`
	} `json:"telemetry"`
	raw json.RawMessage
}

// proveJailed proves prog on input through a one-shot run of the built
// binaries, jailed under memory, with a budget that never binds and ten
// minutes (extra: more flags), and returns the accepted job's result.
func proveJailed(t *testing.T, home, prog, input, memory string, extra ...string) provedJob {
	t.Helper()
	args := append([]string{prog, "--op", "prove", "--input-values", input,
		"--budget", "10000000000", "--memory", memory, "--time", "10m"}, extra...)
	env := cliJSON(t, 0, runArgs(home, args...)...)
	res := provedJob{raw: env.Result}
	if err := json.Unmarshal(env.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res
}
