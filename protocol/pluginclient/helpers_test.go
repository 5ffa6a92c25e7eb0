package pluginclient

import (
	"errors"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

func testCaps() protocol.Capabilities {
	return protocol.Capabilities{
		Backend:        "nox-worker",
		BackendVersion: "0.1.0",
		Contracts:      []string{protocol.ContractV1},
		VM:             "nox",
		ProofKinds:     []string{protocol.ProfilePublicTrace, protocol.ProfileNone},
		Operations:     []protocol.Operation{protocol.OpExecute, protocol.OpProve, protocol.OpVerify},
		Limits: protocol.EnforcedLimits{
			Reductions: true, WallTime: true, Memory: true, ArtifactBytes: true,
			Cancellation: true, Pids: true,
		},
	}
}

func testDescriptor() protocol.WorkerDescriptor {
	return protocol.WorkerDescriptor{
		Machine: protocol.MachineNox, Environment: protocol.EnvPublicStateless, ProofProfile: protocol.ProfilePublicTrace,
		Network: "local",
		Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: "0.1.0", Backend: protocol.BackendIsolatedProcess,
			WorkerID: "w-1", DeviceID: "d-1", BootID: "b-1"},
		MaxArgumentBytes: 65536,
		Acts:             []uint64{},
	}
}

func testResult() protocol.Result {
	return protocol.Result{
		Contract: protocol.ContractV1, JobID: "job-1", Attempt: 2, Profile: protocol.ProfilePublicTrace,
		ProgramIdentity: protocol.ProgramIdentity{Particle: [32]byte{9}, TokensSHA256: [32]byte{8}},
		Kind:            protocol.KindExecutionCertificate,
		Output:          []uint64{8, 18446744069414584320},
		Reductions:      7, Budget: 1000,
		Artifact:  &protocol.ArtifactRef{Name: "certificate.zst", Size: 1234, SHA256: [32]byte{1, 2}},
		Telemetry: protocol.Telemetry{WallTimeMS: 3, CPUTimeMS: 2, PeakMemoryBytes: 1 << 20},
	}
}

// testSpec is a valid job spec for op (verify needs the artifact).
func testSpec(t testing.TB, op protocol.Operation, artifact []byte) []byte {
	t.Helper()
	bundle, err := protocol.WrapNox("add.nox", []byte("[5 [[0 2] [0 6]]]"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := protocol.JobSpec{
		Contract: protocol.ContractV1, JobID: "job-1", Operation: op, Profile: protocol.ProfilePublicTrace,
		Program: protocol.ProgramSpec{Bundle: bundle}, Inputs: []uint64{3, 5},
		Limits: protocol.Limits{Reductions: 1000}, Artifact: artifact,
	}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantCode checks that err is a *protocol.Error with the code and, when
// non-empty, a one-line message containing want.
func wantCode(t testing.TB, err error, code protocol.Code, want string) {
	t.Helper()
	var e *protocol.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *protocol.Error; want %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code %s (%s); want %s", e.Code, e.Message, code)
	}
	if want != "" && !strings.Contains(e.Message, want) {
		t.Fatalf("message %q does not contain %q", e.Message, want)
	}
	if strings.ContainsAny(e.Message, "\n\r") {
		t.Fatalf("message %q is not one line", e.Message)
	}
}
