package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginclient"
)

// TestMain makes the test binary a nox-worker when go-plugin starts it:
// the helper-process pattern, going through realMain exactly as main does
// (the cookie is set and there are no arguments).
func TestMain(m *testing.M) {
	if os.Getenv(measureEnv) == "1" {
		os.Exit(measureChild(os.Args[1:]))
	}
	if os.Getenv(protocol.PluginCookieKey) != "" && len(os.Args) == 1 {
		os.Exit(realMain(nil, os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// startPlugin starts this test binary as a worker plugin over gRPC and
// returns the protocol client.
func startPlugin(t *testing.T, env ...string) *pluginclient.Client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	// Hermetic: the worker's configuration comes from env only.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CYBER_WORKER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	pc, c := dispense(t, cmd)
	t.Cleanup(pc.Kill)
	return c
}

// dispense starts cmd with go-plugin's client, configured as the
// supervisor does, and returns the worker client.
func dispense(t testing.TB, cmd *exec.Cmd) (*plugin.Client, *pluginclient.Client) {
	t.Helper()
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginclient.Handshake,
		Plugins:          pluginclient.PluginMap(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
		SkipHostEnv:      true,
		GRPCDialOptions:  pluginclient.DialOptions,
	})
	rpc, err := pc.Client()
	if err != nil {
		pc.Kill()
		t.Fatal(err)
	}
	c, err := pluginclient.Dispense(rpc)
	if err != nil {
		pc.Kill()
		t.Fatal(err)
	}
	return pc, c
}

func pluginRun(t *testing.T, c *pluginclient.Client, spec []byte, workDir string) (protocol.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := c.Start(ctx, protocol.RunRequest{JobSpec: spec, Attempt: 1, WorkDir: workDir})
	if err != nil {
		return protocol.Result{}, err
	}
	return r.Wait(ctx)
}

func specBytes(t testing.TB, s protocol.JobSpec) []byte {
	t.Helper()
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// frozenCase is one program file of examples/ with its inputs.
type frozenCase struct {
	file   string
	inputs []uint64
}

var frozenCases = []frozenCase{
	{"add.nox", []uint64{3, 5}},
	{"add.bundle.json", []uint64{3, 5}},
	{"countdown.nox", []uint64{40}},
	{"hashchain.nox", []uint64{20, 7}},
	{"inverse.nox", []uint64{7}},
	{"doubling.nox", []uint64{8}},
}

func examplePath(name string) string { return filepath.Join("..", "..", "examples", name) }

// TestPluginMatchesDirect runs each frozen bundle through the direct
// commands (in process) and through the plugin (a separate process over
// go-plugin gRPC) and compares what they report: output, reductions,
// program identity, and for prove the certificate bytes, which the
// supervisor-side check (cert.Verify + cert.Expect) accepts.
func TestPluginMatchesDirect(t *testing.T) {
	c := startPlugin(t)
	for _, fc := range frozenCases {
		t.Run(fc.file, func(t *testing.T) {
			path := examplePath(fc.file)
			bundle, err := loadProgram(path)
			if err != nil {
				t.Fatal(err)
			}
			values := protocol.FormatValues(fc.inputs)

			// execute
			env := cliJSON(t, exitOK, "run", path, "--input-values", values, "--format", "json")
			var direct struct {
				Kind       string   `json:"kind"`
				Output     []string `json:"output"`
				Reductions string   `json:"reductions"`
				Program    struct {
					Particle string `json:"particle"`
				} `json:"program"`
			}
			unmarshal(t, env.Result, &direct)
			res, err := pluginRun(t, c, specBytes(t, cliJob(protocol.OpExecute, protocol.ProfilePublicTrace, bundle, fc.inputs, defaultBudget)), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if direct.Kind != string(res.Kind) || !slices.Equal(direct.Output, decimalStrings(res.Output)) ||
				direct.Reductions != decimalString(res.Reductions) ||
				direct.Program.Particle != hex.EncodeToString(res.ProgramIdentity.Particle[:]) {
				t.Fatalf("direct %+v, plugin %+v", direct, res)
			}

			// prove
			out := filepath.Join(t.TempDir(), "direct.cnxt.zst")
			env = cliJSON(t, exitOK, "prove", path, "--input-values", values, "--output", out, "--format", "json")
			var proved struct {
				Kind       string   `json:"kind"`
				Output     []string `json:"output"`
				Reductions string   `json:"reductions"`
				Artifact   struct {
					SHA256 string `json:"sha256"`
				} `json:"artifact"`
				Program struct {
					Particle string `json:"particle"`
				} `json:"program"`
			}
			unmarshal(t, env.Result, &proved)
			work := t.TempDir()
			pres, err := pluginRun(t, c, specBytes(t, cliJob(protocol.OpProve, protocol.DefaultProveProfile, bundle, fc.inputs, defaultBudget)), work)
			if err != nil {
				t.Fatal(err)
			}
			directFile, _ := os.ReadFile(out)
			pluginFile, err := os.ReadFile(filepath.Join(work, pres.Artifact.Name))
			if err != nil {
				t.Fatal(err)
			}
			if proved.Kind != string(pres.Kind) || !slices.Equal(proved.Output, decimalStrings(pres.Output)) ||
				proved.Reductions != decimalString(pres.Reductions) ||
				proved.Program.Particle != hex.EncodeToString(pres.ProgramIdentity.Particle[:]) ||
				proved.Artifact.SHA256 != hex.EncodeToString(pres.Artifact.SHA256[:]) ||
				!bytes.Equal(directFile, pluginFile) || !slices.Equal(pres.Output, res.Output) ||
				pres.Reductions != res.Reductions {
				t.Fatalf("direct %+v, plugin %+v", proved, pres)
			}

			// The supervisor's own check of the plugin's certificate.
			raw, err := certprofile.Open(protocol.DefaultProveProfile, pluginFile, int64(certprofile.MaxEncodedV2(defaultBudget)))
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			p, err := protocol.ParseBundle(bundle)
			if err != nil {
				t.Fatal(err)
			}
			exp := cert.Expect{Program: p.Tokens, Inputs: fc.inputs, Output: res.Output, Budget: defaultBudget}
			if _, _, err := cert.VerifyFrom(context.Background(), raw, raw.Size, exp, cert.Bounds{}); err != nil {
				t.Fatal(err)
			}

			// And the plugin's verify of the direct certificate.
			vspec := cliJob(protocol.OpVerify, protocol.DefaultProveProfile, bundle, fc.inputs, defaultBudget)
			vspec.Artifact = directFile
			vspec.ExpectedOutput = res.Output
			vres, err := pluginRun(t, c, specBytes(t, vspec), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if vres.Kind != protocol.KindVerification || !vres.Verification.Checked.ExpectedOutput ||
				vres.Verification.ArtifactSHA256 != pres.Artifact.SHA256 {
				t.Fatalf("verification %+v", vres)
			}
		})
	}
}

func TestPluginDescribeAndRefusals(t *testing.T) {
	c := startPlugin(t, protocol.EnvWorkerID+"=w-7", protocol.EnvWorkerDeviceID+"=dev-7", protocol.EnvWorkerBootID+"=boot-7", protocol.EnvWorkerNetwork+"=testnet")
	caps, desc, err := c.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e := desc.Executor
	if caps.Backend != "nox-worker" || !slices.Equal(caps.ProofKinds, protocol.PublicTraceProfiles) ||
		caps.Limits.WallTime || caps.Limits.Memory || !caps.Limits.Cancellation ||
		e.WorkerID != "w-7" || e.DeviceID != "dev-7" || e.BootID != "boot-7" || desc.Network != "testnet" {
		t.Fatalf("caps %+v desc %+v", caps, desc)
	}
	bundle, _ := loadProgram(examplePath("add.nox"))
	base := cliJob(protocol.OpExecute, protocol.ProfilePublicTrace, bundle, []uint64{3, 5}, 100)
	for _, c2 := range []struct {
		name string
		spec []byte
		code protocol.Code
	}{
		{"state", []byte(strings.Replace(string(specBytes(t, base)), `"state_context":null`, `"state_context":{"root":"1"}`, 1)), protocol.CodeUnsupportedState},
		{"secret", []byte(strings.Replace(string(specBytes(t, base)), `{"contract"`, `{"secrets":["1"],"contract"`, 1)), protocol.CodeUnsupportedSecret},
		{"legacy profile", func() []byte { s := base; s.Profile = protocol.ProfileZhengV2; return specBytes(t, s) }(), protocol.CodeUnsupportedProfile},
		{"look", specBytes(t, cliJob(protocol.OpExecute, protocol.ProfilePublicTrace, mustWrap(t, "[17 [[1 0] [1 0]]]"), nil, 100)), protocol.CodeUnsupportedState},
		{"call", specBytes(t, cliJob(protocol.OpProve, protocol.ProfilePublicTrace, mustWrap(t, "[16 [[1 0] [1 0]]]"), nil, 100)), protocol.CodeUnsupportedSecret},
		{"halt", specBytes(t, cliJob(protocol.OpExecute, protocol.ProfilePublicTrace, bundle, []uint64{3, 5}, 2)), protocol.CodeBudgetExhausted},
	} {
		_, err := pluginRun(t, c, c2.spec, t.TempDir())
		if protocol.CodeOf(err) != c2.code {
			t.Errorf("%s: %v, want %s", c2.name, err, c2.code)
		}
	}
	// An oversize artifact leaves nothing under the final name.
	big := cliJob(protocol.OpProve, protocol.ProfilePublicTrace, mustWrap(t, readExample(t, "countdown.nox")), []uint64{100}, 100_000)
	big.Limits.ArtifactBytes = 32
	work := t.TempDir()
	if _, err := pluginRun(t, c, specBytes(t, big), work); protocol.CodeOf(err) != protocol.CodeArtifactTooLarge {
		t.Fatalf("oversize: %v", err)
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// TestPluginCancel cancels a run that would go on for ages (doubling.nox on
// n = 200: 2^201 calls within the depth limit) through the protocol's
// Cancel: the worker acknowledges it and the run ends with cancelled.
func TestPluginCancel(t *testing.T) {
	c := startPlugin(t)
	bundle, _ := loadProgram(examplePath("doubling.nox"))
	for _, op := range []protocol.Operation{protocol.OpExecute, protocol.OpProve} {
		work := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := c.Start(ctx, protocol.RunRequest{
			JobSpec: specBytes(t, cliJob(op, protocol.ProfilePublicTrace, bundle, []uint64{200}, field.P-1)), Attempt: 1, WorkDir: work,
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		select {
		case <-r.Done():
			t.Fatal("the endless run ended by itself")
		default:
		}
		start := time.Now()
		acked, err := r.Cancel(ctx, "test")
		if err != nil || !acked {
			t.Fatalf("%s: cancel acknowledged %v, %v", op, acked, err)
		}
		_, err = r.Wait(ctx)
		if protocol.CodeOf(err) != protocol.CodeCancelled || !strings.Contains(err.Error(), "test") {
			t.Fatalf("%s: %v", op, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: cancellation took %v", op, d)
		}
		if ents, _ := os.ReadDir(work); len(ents) != 0 {
			t.Fatalf("%s left %v", op, ents)
		}
		cancel()
	}
	// The worker is still usable afterwards, and shuts down on request.
	if _, err := pluginRun(t, c, specBytes(t, cliJob(protocol.OpExecute, protocol.ProfilePublicTrace, bundle, []uint64{3}, 1000)), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func mustWrap(t *testing.T, src string) []byte {
	t.Helper()
	b, err := protocol.WrapNox("prog.nox", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(examplePath(name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func unmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

func decimalString(v uint64) string { return protocol.FormatValues([]uint64{v}) }

func decimalStrings(vs []uint64) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = decimalString(v)
	}
	return out
}

// TestPluginWorkRoot: with CYBER_WORKER_WORK_ROOT set (the jail's /work),
// the plugin publishes only beneath it.
func TestPluginWorkRoot(t *testing.T) {
	root := t.TempDir()
	c := startPlugin(t, protocol.EnvWorkerWorkRoot+"="+root)
	bundle, _ := loadProgram(examplePath("add.nox"))
	spec := specBytes(t, cliJob(protocol.OpProve, protocol.ProfilePublicTrace, bundle, []uint64{3, 5}, 100))
	if _, err := pluginRun(t, c, spec, root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "certificate.cnxt.zst")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if _, err := pluginRun(t, c, spec, outside); protocol.CodeOf(err) != protocol.CodeIOError {
		t.Fatalf("outside the work root: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("wrote outside: %v", ents)
	}
}

// The worker proves with its prover on a second goroutine unless the
// supervisor says "off" (its slots take every CPU); a direct command,
// which has its host to itself, does. Fails before: no such setting.
func TestConfigFromEnvProvePipeline(t *testing.T) {
	for env, want := range map[string]bool{"": true, "on": true, "off": false} {
		getenv := func(k string) string {
			if k == protocol.EnvWorkerProvePipeline {
				return env
			}
			return ""
		}
		if got := configFromEnv(getenv).ProvePipeline; got != want {
			t.Errorf("%s=%q: ProvePipeline %v, want %v", protocol.EnvWorkerProvePipeline, env, got, want)
		}
	}
}
