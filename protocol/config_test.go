package protocol

import (
	"reflect"
	"strings"
	"testing"
)

func testDescriptor() WorkerDescriptor {
	return WorkerDescriptor{
		Machine: MachineNox, Environment: EnvPublicStateless, ProofProfile: ProfilePublicTrace,
		Network: "local",
		Executor: Executor{Warrior: WarriorNoxWorker, Version: "0.1.0", Backend: BackendIsolatedProcess,
			WorkerID: "w-1", DeviceID: "d-1", BootID: "b-1"},
		MaxArgumentBytes: 65536,
		Acts:             []uint64{},
	}
}

func TestDescriptor(t *testing.T) {
	d := testDescriptor()
	b, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseDescriptor(b)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(*got, d) || !got.Equal(d) {
		t.Fatalf("round trip:\n%+v\n%+v", *got, d)
	}
	mut := []struct {
		name  string
		f     func(*WorkerDescriptor)
		inMsg string
	}{
		{"machine", func(d *WorkerDescriptor) { d.Machine = "nox/2" }, "machine"},
		{"environment", func(d *WorkerDescriptor) { d.Environment = "x" }, "environment"},
		{"profile", func(d *WorkerDescriptor) { d.ProofProfile = ProfileZhengV1 }, "proof_profile"},
		{"host act with proof", func(d *WorkerDescriptor) { d.Environment = EnvHostAct }, "requires proof_profile"},
		{"backend", func(d *WorkerDescriptor) { d.Executor.Backend = "docker" }, "executor.backend"},
		{"empty network", func(d *WorkerDescriptor) { d.Network = "" }, "network"},
		{"long id", func(d *WorkerDescriptor) { d.Executor.WorkerID = strings.Repeat("w", 129) }, "worker_id"},
		{"control char", func(d *WorkerDescriptor) { d.Executor.BootID = "b\n1" }, "boot_id"},
		{"non-ASCII", func(d *WorkerDescriptor) { d.Executor.DeviceID = "dé" }, "device_id"},
		{"zero arg bytes", func(d *WorkerDescriptor) { d.MaxArgumentBytes = 0 }, "max_argument_bytes"},
		{"huge arg bytes", func(d *WorkerDescriptor) { d.MaxArgumentBytes = 8<<20 + 1 }, "max_argument_bytes"},
		{"unsorted acts", func(d *WorkerDescriptor) { d.Acts = []uint64{2, 1} }, "ascending"},
		{"duplicate acts", func(d *WorkerDescriptor) { d.Acts = []uint64{1, 1} }, "ascending"},
		{"too many acts", func(d *WorkerDescriptor) { d.Acts = make([]uint64, 257) }, "257 acts"},
	}
	for _, m := range mut {
		d := testDescriptor()
		m.f(&d)
		wantCode(t, d.Validate(), CodeInvalidJob, m.inMsg)
	}
	host := testDescriptor()
	host.Environment, host.ProofProfile, host.Executor.Backend = EnvHostAct, ProfileNone, BackendEmbeddedSync
	host.Acts = []uint64{1, 7, 18446744073709551615}
	if err := host.Validate(); err != nil {
		t.Fatal(err)
	}
	if host.Equal(testDescriptor()) {
		t.Fatal("Equal")
	}
	b, _ = host.MarshalJSON()
	if got, err := ParseDescriptor(b); err != nil || !got.Equal(host) {
		t.Fatalf("host round trip: %v", err)
	}
	s := string(b)
	for _, c := range []struct{ in, inMsg string }{
		{strings.Replace(s, `"network":"local"`, `"network":"local","x":1`, 1), "$.x: unknown key"},
		{strings.Replace(s, `"boot_id":"b-1"`, `"boot_id":"b-1","pid":1`, 1), "$.executor.pid: unknown key"},
		{strings.Replace(s, `"network":"local"`, `"network":"local","network":"x"`, 1), "$.network: duplicate key"},
		{strings.Replace(s, `"max_argument_bytes":"65536"`, `"max_argument_bytes":65536`, 1), "not a JSON number"},
		{strings.Replace(s, `"acts":["1"`, `"acts":["01"`, 1), "$.acts[0]"},
		{strings.Replace(s, `"boot_id":"b-1"`, ``, 1), "malformed"},
		{strings.Replace(s, `,"boot_id":"b-1"`, ``, 1), "$.executor.boot_id: required"},
	} {
		_, err := ParseDescriptor([]byte(c.in))
		wantCode(t, err, CodeInvalidJob, c.inMsg)
	}
}

func TestCapabilities(t *testing.T) {
	c := testCaps()
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseCapabilities(b)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if !reflect.DeepEqual(*got, c) {
		t.Fatalf("round trip:\n%+v\n%+v", *got, c)
	}
	// Readers of a backend's report ignore what they do not know.
	s := string(b)
	newer := strings.Replace(s, `"vm":"nox"`, `"vm":"nox","gpu":{"count":"2"}`, 1)
	newer = strings.Replace(newer, `"cpu":false`, `"cpu":false,"io":true`, 1)
	if got, err := ParseCapabilities([]byte(newer)); err != nil || !reflect.DeepEqual(*got, c) {
		t.Fatalf("unknown keys: %v", err)
	}
	for _, c := range []struct{ in, inMsg string }{
		{strings.Replace(s, `"vm":"nox"`, `"vm":"nox","vm":"nox"`, 1), "duplicate key"},
		{strings.Replace(s, `"vm":"nox"`, `"vm":"triton"`, 1), "vm must be nox"},
		{strings.Replace(s, `"succinct":false`, `"succinct":true`, 1), "succinct"},
		{strings.Replace(s, `"succinct":false`, `"succinct":"false"`, 1), "$.succinct: must be a boolean"},
		{strings.Replace(s, `"operations":["execute"`, `"operations":["run"`, 1), "operations"},
		{strings.Replace(s, `"operations":["execute","prove"`, `"operations":["execute","execute"`, 1), "operations"},
		{strings.Replace(s, `"contracts":["cyber/worker/v1"]`, `"contracts":["cyber/worker/v1","cyber/worker/v1"]`, 1), "contracts"},
		{strings.Replace(s, `"backend":"nox-worker",`, ``, 1), "$.backend: required"},
	} {
		_, err := ParseCapabilities([]byte(c.in))
		wantCode(t, err, CodeInternalError, c.inMsg)
	}
}

func testResult() Result {
	return Result{
		Contract: ContractV1, JobID: "job-1", Attempt: 2, Profile: ProfilePublicTrace,
		ProgramIdentity: ProgramIdentity{Particle: [32]byte{9}, TokensSHA256: [32]byte{8}},
		Kind:            KindExecutionCertificate,
		Output:          []uint64{8, 18446744069414584320},
		Reductions:      7, Budget: 1000,
		Artifact:  &ArtifactRef{Name: "certificate.zst", Size: 1234, SHA256: [32]byte{1, 2}},
		Telemetry: Telemetry{WallTimeMS: 3, CPUTimeMS: 2, PeakMemoryBytes: 1 << 20},
	}
}

func TestResult(t *testing.T) {
	verification := testResult()
	verification.Kind, verification.Artifact = KindVerification, nil
	verification.Verification = &Verification{ArtifactSHA256: [32]byte{5},
		Checked: Expectations{Program: true, Inputs: true, ExpectedOutput: false, Budget: true}}
	execution := testResult()
	execution.Kind, execution.Artifact, execution.Profile = KindExecution, nil, ProfileNone
	for _, r := range []Result{testResult(), verification, execution} {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseResult(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(*got, r) {
			t.Fatalf("round trip:\n%+v\n%+v", *got, r)
		}
		// Forward compatibility: unknown result fields are ignored.
		more := strings.Replace(string(b), `"kind"`, `"proof_format":"x","kind"`, 1)
		more = strings.Replace(more, `"wall_time_ms"`, `"queue_ms":"1","wall_time_ms"`, 1)
		if got, err := ParseResult([]byte(more)); err != nil || !reflect.DeepEqual(*got, r) {
			t.Fatalf("unknown fields: %v", err)
		}
	}
	mut := []struct {
		name  string
		f     func(*Result)
		inMsg string
	}{
		{"contract", func(r *Result) { r.Contract = "x" }, "contract"},
		{"job id", func(r *Result) { r.JobID = "../x" }, "job_id"},
		{"attempt", func(r *Result) { r.Attempt = 0 }, "attempt"},
		{"profile", func(r *Result) { r.Profile = ProfileZhengV2 }, "profile"},
		{"kind", func(r *Result) { r.Kind = "proof" }, "kind"},
		{"none certificate", func(r *Result) { r.Profile = ProfileNone }, "execution results only"},
		{"empty output", func(r *Result) { r.Output = nil }, "output"},
		{"output = p", func(r *Result) { r.Output = []uint64{18446744069414584321} }, "output[0]"},
		{"over budget", func(r *Result) { r.Reductions = 1001 }, "exceed"},
		{"zero budget", func(r *Result) { r.Budget, r.Reductions = 0, 0 }, "budget"},
		{"certificate without artifact", func(r *Result) { r.Artifact = nil }, "execution_certificate"},
		{"artifact name", func(r *Result) { r.Artifact.Name = ".x" }, "artifact.name"},
		{"execution with artifact", func(r *Result) { r.Kind = KindExecution }, "execution result"},
	}
	for _, m := range mut {
		r := testResult()
		m.f(&r)
		wantCode(t, r.Validate(), CodeExecutionFailed, m.inMsg)
	}
	b, _ := testResult().MarshalJSON()
	s := string(b)
	for _, c := range []struct{ in, inMsg string }{
		{strings.Replace(s, `"attempt":"2"`, `"attempt":"2","attempt":"3"`, 1), "$.attempt: duplicate key"},
		{strings.Replace(s, `"attempt":"2"`, `"attempt":2`, 1), "not a JSON number"},
		{strings.Replace(s, `"attempt":"2"`, `"attempt":"4294967296"`, 1), "2^32-1"},
		{strings.Replace(s, `"reductions":"7"`, `"reductions":"07"`, 1), "$.reductions"},
		{strings.Replace(s, `"name":"certificate.zst"`, `"name":"certificate.zst","name":"x"`, 1), "$.artifact.name: duplicate key"},
		{strings.Replace(s, `"output":[`, `"output":["18446744069414584321",`, 1), "$.output[0]"},
		{`{}`, "required"},
	} {
		_, err := ParseResult([]byte(c.in))
		wantCode(t, err, CodeExecutionFailed, c.inMsg)
	}
}

// TestDescriptorEncodingRemembered: the remembered encoding is the
// descriptor's own, never another's, and a caller may change what it got.
func TestDescriptorEncodingRemembered(t *testing.T) {
	a, b := testDescriptor(), testDescriptor()
	b.Executor.BootID = "another-boot"
	b.Acts = []uint64{5}
	fresh := func(d WorkerDescriptor) string {
		lastDescriptor.Store(nil)
		out, err := d.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	wantA, wantB := fresh(a), fresh(b)
	if wantA == wantB {
		t.Fatal("two descriptors, one encoding")
	}
	for i, d := range []WorkerDescriptor{a, a, b, b, a} {
		out, err := d.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want := wantA
		if i == 2 || i == 3 {
			want = wantB
		}
		if string(out) != want {
			t.Fatalf("encoding %d: %s, want %s", i, out, want)
		}
		out[0] = 'x'
	}
	// Changing the acts the cache was filled from changes nothing.
	c := testDescriptor()
	c.Acts = []uint64{7}
	wantC := fresh(c)
	c.Acts[0] = 8 // the slice the cache was filled from
	if out, _ := c.MarshalJSON(); string(out) == wantC || !strings.Contains(string(out), `"8"`) {
		t.Fatalf("after a caller changed its acts: %s", out)
	}
}
