package worker

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

func TestDescribe(t *testing.T) {
	w := newWorker(t, Config{WorkerID: "w-1", DeviceID: "dev-1", BootID: "boot-1", Version: "9.9.9", Network: "testnet"})
	caps, desc, err := w.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := caps.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := desc.Validate(); err != nil {
		t.Fatal(err)
	}
	want := protocol.Capabilities{
		Backend: "nox-worker", BackendVersion: "9.9.9",
		Contracts: []string{"cyber/worker/v1"}, VM: "nox",
		ProofKinds: []string{"cyber-nox-public-trace-v2", "cyber-nox-public-trace-v1"},
		Operations: []protocol.Operation{"execute", "prove", "verify"},
		Limits:     protocol.EnforcedLimits{Reductions: true, ArtifactBytes: true, Cancellation: true},
	}
	got, _ := caps.MarshalJSON()
	wantJSON, _ := want.MarshalJSON()
	if string(got) != string(wantJSON) {
		t.Fatalf("capabilities\n got %s\nwant %s", got, wantJSON)
	}
	wantDesc := protocol.WorkerDescriptor{
		Machine: "nox/1", Environment: "cyber/public-stateless/1", ProofProfile: "cyber-nox-public-trace-v1",
		Network: "testnet",
		Executor: protocol.Executor{Warrior: "nox-worker", Version: "9.9.9", Backend: "isolated-process/1",
			WorkerID: "w-1", DeviceID: "dev-1", BootID: "boot-1"},
		MaxArgumentBytes: DefaultMaxArgumentBytes,
	}
	if !desc.Equal(wantDesc) {
		t.Fatalf("descriptor %+v", desc)
	}
	// The caller may not change the worker's capabilities through the
	// returned lists.
	caps.ProofKinds[0] = "x"
	again, _, _ := w.Describe(context.Background())
	if again.ProofKinds[0] != protocol.ProfilePublicTraceV2 {
		t.Fatal("Describe returned shared slices")
	}
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	w := newWorker(t, Config{})
	c := w.Config()
	if c.Version != Version || c.Network != DefaultNetwork || c.WorkerID == "" || c.DeviceID == "" || c.BootID == "" ||
		c.MaxCertificateBytes != DefaultMaxCertificateBytes {
		t.Fatalf("defaults %+v", c)
	}
	if other := newWorker(t, Config{}); other.Config().WorkerID == c.WorkerID {
		t.Fatal("generated worker ids repeat")
	}
	for name, cfg := range map[string]Config{
		"relative root":    {WorkRoot: "work"},
		"unclean root":     {WorkRoot: "/work/"},
		"worker id":        {WorkerID: "a\nb"},
		"long device id":   {DeviceID: strings.Repeat("d", 129)},
		"network":          {Network: "é"},
		"argument bytes":   {MaxArgumentBytes: protocol.MaxArgumentBytesLimit + 1},
		"certificate size": {MaxCertificateBytes: cert.MaxEncodedBytes + 1},
		"negative size":    {MaxCertificateBytes: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), ErrInvalidConfig.Error()) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestExecute(t *testing.T) {
	w := newWorker(t, Config{})
	for _, c := range []struct {
		name   string
		src    string
		inputs []uint64
		output []uint64
		cost   uint64
	}{
		{"add", addNox, []uint64{3, 5}, []uint64{8}, 3},
		{"inverse", invNox, []uint64{7}, []uint64{2635249152773512046}, 65},
		{"countdown", example(t, "countdown.nox"), []uint64{10}, []uint64{0}, 120},
		{"doubling", example(t, "doubling.nox"), []uint64{10}, []uint64{1024}, 24562},
		{"hashchain", example(t, "hashchain.nox"), []uint64{3, 7},
			[]uint64{16026441910461879358, 4127042615640775805, 17216592300335164425, 3749972291555656512}, 126},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := newJob(t, protocol.OpExecute, c.src, c.inputs, 1_000_000)
			res, _, err := runSpec(t, w, j.bytes(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Kind != protocol.KindExecution || !slices.Equal(res.Output, c.output) ||
				res.Reductions != c.cost || res.Budget != 1_000_000 {
				t.Fatalf("result %+v", res)
			}
			f, _ := noun.Parse(c.src)
			if res.ProgramIdentity != protocol.IdentityOf(noun.AppendTokens(nil, f), f.Particle()) {
				t.Fatal("program identity")
			}
			if res.JobID != "job-1" || res.Attempt != 1 || res.Contract != protocol.ContractV1 ||
				res.Profile != protocol.ProfilePublicTrace || res.Artifact != nil || res.Verification != nil {
				t.Fatalf("coordinates %+v", res)
			}
		})
	}
}

func TestExecuteFailures(t *testing.T) {
	w := newWorker(t, Config{})
	for _, c := range []struct {
		name     string
		src      string
		inputs   []uint64
		budget   uint64
		code     protocol.Code
		fragment string
	}{
		{"halt", example(t, "countdown.nox"), []uint64{100}, 50, protocol.CodeBudgetExhausted, "50 reductions"},
		{"inv zero", invNox, []uint64{0}, 1000, protocol.CodeExecutionFailed, "InvZero"},
		{"type error", "[5 [[1 [1 2]] [1 3]]]", nil, 1000, protocol.CodeExecutionFailed, "TypeError"},
		{"axis error", "[0 7]", nil, 1000, protocol.CodeExecutionFailed, "AxisError"},
		{"depth", example(t, "countdown.nox"), []uint64{600}, 1_000_000, protocol.CodeExecutionFailed, "Malformed"},
		{"call reached", "[16 [[1 7] [1 0]]]", nil, 1000, protocol.CodeUnsupportedSecret, "call"},
		{"look reached", "[17 [[1 0] [1 0]]]", nil, 1000, protocol.CodeUnsupportedState, "look"},
		{"call in a branch", "[4 [[0 2] [[16 [[1 7] [1 0]]] [1 1]]]]", []uint64{0}, 1000, protocol.CodeUnsupportedSecret, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, op := range []protocol.Operation{protocol.OpExecute, protocol.OpProve} {
				_, dir, err := runSpec(t, w, newJob(t, op, c.src, c.inputs, c.budget).bytes(t))
				wantCode(t, err, c.code, c.fragment)
				if names := dirNames(t, dir); len(names) != 0 {
					t.Fatalf("%s left %v", op, names)
				}
			}
		})
	}
	// Data that merely looks like call or look is fine.
	res, _, err := runSpec(t, w, newJob(t, protocol.OpExecute, "[1 [16 17]]", nil, 10).bytes(t))
	if err != nil || !slices.Equal(res.Output, []uint64{16, 17}) {
		t.Fatalf("quoted 16/17: %v %+v", err, res)
	}
}

// proveJob proves src and returns the result and the certificate file's
// bytes.
func proveJob(t testing.TB, w *Worker, src string, inputs []uint64, budget uint64) (protocol.Result, []byte) {
	t.Helper()
	res, dir, err := runSpec(t, w, newJob(t, protocol.OpProve, src, inputs, budget).bytes(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, res.Artifact.Name))
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

func TestProveThenVerify(t *testing.T) {
	w := newWorker(t, Config{})
	src := example(t, "hashchain.nox")
	inputs := []uint64{5, 11}
	res, file := proveJob(t, w, src, inputs, 10_000)
	if res.Kind != protocol.KindExecutionCertificate || res.Artifact.Name != ArtifactName ||
		res.Artifact.Size != uint64(len(file)) || res.Artifact.SHA256 != sha256.Sum256(file) {
		t.Fatalf("result %+v", res)
	}
	// The same numbers as native execution.
	exec, _, err := runSpec(t, w, newJob(t, protocol.OpExecute, src, inputs, 10_000).bytes(t))
	if err != nil || !slices.Equal(exec.Output, res.Output) || exec.Reductions != res.Reductions ||
		exec.ProgramIdentity != res.ProgramIdentity {
		t.Fatalf("execute %+v / %v vs prove %+v", exec, err, res)
	}
	// The supervisor-side check: decompress, cert.Verify for the job.
	raw, err := artifacts.Decompress(file, int64(cert.MaxEncodedFor(10_000)))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := noun.Parse(src)
	exp := cert.Expect{Program: noun.AppendTokens(nil, f), Inputs: inputs, Output: res.Output, Budget: 10_000}
	if _, _, err := cert.Verify(context.Background(), raw, exp, cert.Bounds{}); err != nil {
		t.Fatal(err)
	}

	// The worker's own verify job.
	for _, expected := range [][]uint64{nil, res.Output} {
		j := newJob(t, protocol.OpVerify, src, inputs, 10_000)
		j.Artifact = file
		j.ExpectedOutput = expected
		v, _, err := runSpec(t, w, j.bytes(t))
		if err != nil {
			t.Fatal(err)
		}
		want := protocol.Expectations{Program: true, Inputs: true, ExpectedOutput: expected != nil, Budget: true}
		if v.Kind != protocol.KindVerification || v.Verification.Checked != want ||
			v.Verification.ArtifactSHA256 != sha256.Sum256(file) || !slices.Equal(v.Output, res.Output) ||
			v.Reductions != res.Reductions || v.Budget != 10_000 || v.ProgramIdentity != res.ProgramIdentity {
			t.Fatalf("verification %+v %+v", v, v.Verification)
		}
	}
}

func TestProveArtifactLimit(t *testing.T) {
	w := newWorker(t, Config{})
	j := newJob(t, protocol.OpProve, example(t, "countdown.nox"), []uint64{50}, 10_000)
	j.Limits.ArtifactBytes = 16
	_, dir, err := runSpec(t, w, j.bytes(t))
	wantCode(t, err, protocol.CodeArtifactTooLarge, "16")
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("left %v", names)
	}
	// The exact compressed size passes.
	j.Limits.ArtifactBytes = 0
	res, _ := proveJob(t, w, example(t, "countdown.nox"), []uint64{50}, 10_000)
	j.Limits.ArtifactBytes = res.Artifact.Size
	if _, _, err := runSpec(t, w, j.bytes(t)); err != nil {
		t.Fatal(err)
	}
	j.Limits.ArtifactBytes = res.Artifact.Size - 1
	_, _, err = runSpec(t, w, j.bytes(t))
	wantCode(t, err, protocol.CodeArtifactTooLarge, "")

	// The worker's own bound on uncompressed certificates.
	small := newWorker(t, Config{MaxCertificateBytes: 64})
	_, dir, err = runSpec(t, small, newJob(t, protocol.OpProve, example(t, "countdown.nox"), []uint64{50}, 10_000).bytes(t))
	wantCode(t, err, protocol.CodeArtifactTooLarge, "uncompressed")
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("left %v", names)
	}
}

func TestProveWorkDir(t *testing.T) {
	spec := newJob(t, protocol.OpProve, addNox, []uint64{1, 2}, 100).bytes(t)
	run := func(w *Worker, dir string) error {
		_, err := w.Run(context.Background(), protocol.RunRequest{JobSpec: spec, Attempt: 1, WorkDir: dir})
		return err
	}
	w := newWorker(t, Config{})
	base := t.TempDir()

	// An existing artifact is never replaced.
	taken := filepath.Join(base, "taken")
	os.Mkdir(taken, 0o700)
	os.WriteFile(filepath.Join(taken, ArtifactName), []byte("old"), 0o600)
	wantCode(t, run(w, taken), protocol.CodeIOError, "already taken")
	if b, _ := os.ReadFile(filepath.Join(taken, ArtifactName)); string(b) != "old" {
		t.Fatal("existing artifact replaced")
	}
	if names := dirNames(t, taken); len(names) != 1 {
		t.Fatalf("left %v", names)
	}

	wantCode(t, run(w, filepath.Join(base, "missing")), protocol.CodeIOError, "does not exist")
	os.WriteFile(filepath.Join(base, "file"), nil, 0o600)
	wantCode(t, run(w, filepath.Join(base, "file")), protocol.CodeIOError, "not a directory")
	syscall.Mkfifo(filepath.Join(base, "fifo"), 0o600)
	wantCode(t, run(w, filepath.Join(base, "fifo")), protocol.CodeIOError, "")
	os.Mkdir(filepath.Join(base, "real"), 0o700)
	os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link"))
	wantCode(t, run(w, filepath.Join(base, "link")), protocol.CodeIOError, "symlink")
	if names := dirNames(t, filepath.Join(base, "real")); len(names) != 0 {
		t.Fatalf("wrote through the symlink: %v", names)
	}

	// Confinement to the work root.
	root := filepath.Join(base, "root")
	os.MkdirAll(filepath.Join(root, "job", "1"), 0o700)
	confined := newWorker(t, Config{WorkRoot: root})
	wantCode(t, run(confined, filepath.Join(base, "real")), protocol.CodeIOError, "work root")
	wantCode(t, run(confined, root+"x"), protocol.CodeIOError, "work root")
	if err := run(confined, filepath.Join(root, "job", "1")); err != nil {
		t.Fatal(err)
	}
	if err := run(newWorker(t, Config{WorkRoot: filepath.Join(root, "job", "1")}), filepath.Join(root, "job", "1")); err == nil {
		t.Fatal("second publication under one name succeeded")
	}
}

func TestRefusals(t *testing.T) {
	w := newWorker(t, Config{})
	base := newJob(t, protocol.OpExecute, addNox, []uint64{3, 5}, 1000)
	edit := func(f func(*job)) []byte {
		j := *base
		f(&j)
		return j.bytes(t)
	}
	raw := func(from, to string) []byte {
		b := string(base.bytes(t))
		if !strings.Contains(b, from) {
			t.Fatalf("spec lacks %q", from)
		}
		return []byte(strings.Replace(b, from, to, 1))
	}
	bundle := func(fields string) []byte {
		return []byte(`{"name":"x","target_vm":"nox","assembly":"[5 [[0 2] [0 6]]]"` + fields + `}`)
	}
	for _, c := range []struct {
		name string
		spec []byte
		code protocol.Code
	}{
		{"state context", raw(`"state_context":null`, `"state_context":{}`), protocol.CodeUnsupportedState},
		{"secret key", raw(`{"contract"`, `{"secret":["1"],"contract"`), protocol.CodeUnsupportedSecret},
		{"witness key", raw(`{"contract"`, `{"witness":[],"contract"`), protocol.CodeUnsupportedSecret},
		{"reads state", edit(func(j *job) { j.Program.Bundle = bundle(`,"reads_state":true`) }), protocol.CodeUnsupportedState},
		{"other vm", edit(func(j *job) {
			j.Program.Bundle = []byte(`{"target_vm":"triton","assembly":"[1 0]"}`)
		}), protocol.CodeUnsupportedProfile},
		{"other os", edit(func(j *job) { j.Program.Bundle = bundle(`,"target_os":"neptune"`) }), protocol.CodeUnsupportedProfile},
		{"zheng v1", edit(func(j *job) { j.Profile = protocol.ProfileZhengV1 }), protocol.CodeUnsupportedProfile},
		{"zheng v2", edit(func(j *job) { j.Profile = protocol.ProfileZhengV2 }), protocol.CodeUnsupportedProfile},
		{"zheng v3", edit(func(j *job) { j.Profile = protocol.ProfileZhengV3 }), protocol.CodeUnsupportedProfile},
		{"unknown profile", edit(func(j *job) { j.Profile = "cyber-nox-public-trace-v3" }), protocol.CodeUnsupportedProfile},
		{"case folded profile", edit(func(j *job) { j.Profile = "CYBER-NOX-PUBLIC-TRACE-V1" }), protocol.CodeUnsupportedProfile},
		{"none profile", edit(func(j *job) { j.Profile = protocol.ProfileNone }), protocol.CodeUnsupportedProfile},
		{"zero budget", edit(func(j *job) { j.Limits.Reductions = 0 }), protocol.CodeInvalidJob},
		{"input not canonical", raw(`"inputs":["3","5"]`, `"inputs":["3","18446744069414584321"]`), protocol.CodeInvalidJob},
		{"identity mismatch", edit(func(j *job) {
			j.Program.Identity = &protocol.ProgramIdentity{Particle: [32]byte{1}}
		}), protocol.CodeInvalidJob},
		{"not json", []byte("{"), protocol.CodeInvalidJob},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, op := range []protocol.Operation{protocol.OpExecute, protocol.OpProve} {
				spec := c.spec
				if op == protocol.OpProve {
					spec = []byte(strings.Replace(string(spec), `"operation":"execute"`, `"operation":"prove"`, 1))
				}
				_, dir, err := runSpec(t, w, spec)
				wantCode(t, err, c.code, "")
				if names := dirNames(t, dir); len(names) != 0 {
					t.Fatalf("left %v", names)
				}
			}
		})
	}
	// Host-enforced limits are accepted: the supervisor admitted them.
	j := *base
	j.Limits.WallTimeMS, j.Limits.MemoryBytes = 1000, 256<<20
	if _, _, err := runSpec(t, w, j.bytes(t)); err != nil {
		t.Fatal(err)
	}
	// The envelope is checked before anything else.
	for _, req := range []protocol.RunRequest{
		{JobSpec: base.bytes(t), Attempt: 0, WorkDir: "/tmp"},
		{JobSpec: base.bytes(t), Attempt: 1, WorkDir: "tmp"},
		{JobSpec: nil, Attempt: 1, WorkDir: "/tmp"},
	} {
		_, err := w.Run(context.Background(), req)
		wantCode(t, err, protocol.CodeInvalidJob, "")
	}
}

func TestMemoryGuard(t *testing.T) {
	if dataMemory(0, 0) != 0 || maxCells(0) != 0 || proveOptions(0) != (cert.ProveOptions{}) {
		t.Fatal("no memory limit, no guard")
	}
	// The runtime's soft limit less the reserve (twice the bundle).
	if softLimit(1<<30) != 1<<30-runtimeSlack || softLimit(64<<20) != 54<<20 || softLimit(2) != 1 {
		t.Fatalf("soft limits %d, %d, %d", softLimit(1<<30), softLimit(64<<20), softLimit(2))
	}
	if d := dataMemory(1<<30, 1<<20); d != 1<<30-runtimeSlack-dataReserve-2<<20 || maxCells(d) != d/reduce.CellBytes {
		t.Fatalf("1 GiB: %d bytes for data", d)
	}
	if d := dataMemory(64<<20, 0); d != 48<<20 {
		t.Fatalf("64 MiB: %d bytes for data", d)
	}
	if dataMemory(1, 0) != 1 || maxCells(1) != 1 || dataMemory(32<<20, 0) != 20<<20 || dataMemory(16<<20, 0) != 8<<20 {
		t.Fatal("small limits")
	}
	// A program that builds and holds 2^n pairs (doubling with cons
	// instead of add) stops with memory_exhausted under a small limit,
	// and runs without one. 2^19 held pairs are twice the 256 Ki cells
	// of a 64 MiB job. (2^18 stopped too while cells were built in
	// slabs: the census counted the slabs' dropped subjects, which the
	// collector could not free, with the result's pairs.)
	r := "[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]"
	f := "[4 [[9 [[0 3] [1 0]]] [[1 1] [3 [" + r + " " + r + "]]]]]"
	src := "[2 [[3 [[1 " + f + "] [0 2]]] [1 " + f + "]]]"
	w := newWorker(t, Config{})
	j := newJob(t, protocol.OpExecute, src, []uint64{19}, 1<<40)
	j.Limits.MemoryBytes = 64 << 20
	_, _, err := runSpec(t, w, j.bytes(t))
	wantCode(t, err, protocol.CodeMemoryExhausted, "")
	j.Operation = protocol.OpProve
	_, _, err = runSpec(t, w, j.bytes(t))
	wantCode(t, err, protocol.CodeMemoryExhausted, "")
	j.Operation = protocol.OpExecute
	j.Limits.MemoryBytes = 0
	j.Inputs = []uint64{12}
	if _, _, err := runSpec(t, w, j.bytes(t)); err != nil {
		t.Fatal(err)
	}
	// The same shape with add instead of cons builds as many pairs (a
	// subject per call) and holds none of them: it finishes, executed
	// under 32 MiB and proved under 40 MiB (its certificate and the
	// encoder need 20 MiB). (The guard bounded the pairs built: 87k
	// under 32 MiB for execute, 40k under 40 MiB for prove, and these
	// runs build 131k and 65k.)
	f = "[4 [[9 [[0 3] [1 0]]] [[1 1] [5 [" + r + " " + r + "]]]]]"
	spin := newJob(t, protocol.OpExecute, "[2 [[3 [[1 "+f+"] [0 2]]] [1 "+f+"]]]", nil, 1<<40)
	for _, c := range []struct {
		op     protocol.Operation
		n      uint64
		memory uint64
	}{{protocol.OpExecute, 16, 32 << 20}, {protocol.OpProve, 15, 40 << 20}} {
		spin.Operation, spin.Inputs, spin.Limits.MemoryBytes = c.op, []uint64{c.n}, c.memory
		res, _, err := runSpec(t, w, spin.bytes(t))
		if err != nil || len(res.Output) != 1 || res.Output[0] != 1<<c.n {
			t.Fatalf("%s spin %d under %d MiB: %+v %v", c.op, c.n, c.memory>>20, res.Output, err)
		}
	}
}
