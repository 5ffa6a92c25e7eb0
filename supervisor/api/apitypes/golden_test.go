package apitypes

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/golden"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// update rewrites the golden files from the fixtures: go test
// ./supervisor/api/apitypes -update. A changed golden file is a change
// clients see: docs/supervisor.md lists every rename.
var update = flag.Bool("update", false, "rewrite testdata/*.json from the fixtures")

var (
	t0 = time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	t1 = t0.Add(1500 * time.Millisecond)
	t2 = t0.Add(3 * time.Second)
)

const digest = "5d2b0c6a2f1e7f0b7a6f4f0e5c9a3d2e1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e"

var contractResult = json.RawMessage(`{"contract":"cyber/worker/v1","job_id":"j1","attempt":"1","output":["8"]}`)

func fixtureJob() Job {
	return Job{
		JobID: "j1", State: lifecycle.Accepted, Operation: "prove", Program: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Priority: 5, Seq: 42,
		Retry:    RetryPolicy{MaxAttempts: 3, BackoffNS: int64(time.Second), MaxBackoffNS: int64(time.Minute), Retryable: []protocol.Code{protocol.CodeDeadlineExceeded}},
		Attempts: 2, AttemptsAllowed: 4, InterruptedAttempts: 1,
		Resolved:        &Resolution{Attempt: 1, As: "retry", Reason: "host lost", Time: t1},
		AcceptedAttempt: 2, CancelReason: "", SpecDigest: digest,
		Created: t0, Updated: t2, NotBefore: t1,
		Result:          contractResult,
		CertificatePath: "/var/lib/cyber-supervisor/sandboxes/j1/2/certificate.bin.zst",
		CertificateHost: "h1", CertificateInHome: "sandboxes/j1/2/certificate.bin.zst",
	}
}

func fixtureAttempt() Attempt {
	return Attempt{
		JobID: "j1", N: 2, State: lifecycle.Accepted, Host: "h1", Boot: "b-7", Generation: 9,
		Created: t0, Started: t1, Ended: t2, CancelRequested: t1, CancelAcked: t2,
		Error:    protocol.Errorf(protocol.CodeDeadlineExceeded, "ran past 1s"),
		Produced: contractResult, Artifact: "certificate.bin.zst", ArtifactSHA256: digest,
		Verification: json.RawMessage(`{"verifier":"cert"}`),
		Telemetry:    Telemetry{WallTimeMS: 1500, CPUTimeMS: 1200, PeakMemoryBytes: 8 << 20, Killed: "deadline", OOMKilled: true},
	}
}

func fixtureEvent() Event {
	return Event{JobID: "j1", Seq: 7, Time: t1, Attempt: 2, Host: "h1", From: lifecycle.Running, To: lifecycle.Produced, Reason: "worker produced a result"}
}

func fixtureCheck() CheckReport {
	return CheckReport{
		File: "/var/lib/cyber-supervisor/store/supervisor.db", Schema: 8, PageSize: 4096, Pages: 64, Records: 120,
		Jobs: 10, Attempts: 12, Events: 80, Queued: 1, Tombstones: 2, FencingRecords: 6, Signatures: "verified",
		UnauthenticatedRecords: 1,
		Backup:                 &BackupMark{Taken: t0, Boot: "b-7", Boots: 7},
		Fence:                  &RestoreFence{At: t1, Restores: 1, Invocations: 3, Reason: "the home's emit.jsonl is longer", Emitted: 4},
		Problems:               []string{"job j9: no spec"}, Note: "jobs are on etcd",
	}
}

// capabilities is contract JSON of a backend's capabilities.
func capabilities() json.RawMessage {
	raw, err := json.Marshal(protocol.Capabilities{Backend: "nox-worker", BackendVersion: "0.1.0", Contracts: []string{"cyber/worker/v1"}, VM: "nox",
		ProofKinds: []string{"cyber-nox-public-trace-v1"}, Operations: []protocol.Operation{protocol.OpExecute, protocol.OpProve, protocol.OpVerify},
		Limits: protocol.EnforcedLimits{Reductions: true, WallTime: true, Memory: true, ArtifactBytes: true, Cancellation: true, Pids: true}})
	if err != nil {
		panic(err)
	}
	return raw
}

// fixtures is a value of every exported type, each field set: its JSON is
// testdata/<type>.json.
func fixtures() map[string]any {
	fx := map[string]any{
		"Job":         fixtureJob(),
		"RetryPolicy": fixtureJob().Retry,
		"Resolution":  *fixtureJob().Resolved,
		"Attempt":     fixtureAttempt(),
		"Telemetry":   fixtureAttempt().Telemetry,
		"Claim": Claim{JobID: "j1", Attempt: 2, Generation: 9, Created: t1, Signature: "00ff",
			Worker: protocol.WorkerDescriptor{Machine: "nox/1", Environment: "cyber/public-stateless/1", ProofProfile: "cyber-nox-public-trace-v1",
				Network: "mainnet", MaxArgumentBytes: 1 << 20,
				Executor: protocol.Executor{Warrior: "nox-worker", Version: "0.1.0", Backend: "isolated-process/1", WorkerID: "w1", DeviceID: "d1", BootID: "b-7"}}},
		"JobStatus":     JobStatus{Job: fixtureJob(), Attempts: []Attempt{fixtureAttempt()}, Claims: []Claim{}},
		"Event":         fixtureEvent(),
		"ErrorReply":    ErrorReply{Error: protocol.Errorf(protocol.CodeUnknownJob, "job j2: unknown")},
		"SubmitRequest": SubmitRequest{Spec: json.RawMessage(`{"contract":"cyber/worker/v1"}`), Priority: 5, Retry: &RetryRequest{MaxAttempts: 3, BackoffNS: 1e9, MaxBackoffNS: 6e10, Retryable: []protocol.Code{protocol.CodeIOError}}},
		"RetryRequest":  RetryRequest{MaxAttempts: 3, BackoffNS: 1e9, MaxBackoffNS: 6e10},
		"SubmitReply":   SubmitReply{Job: fixtureJob(), Created: true},
		"Submitted":     Submitted{JobID: "j1", State: lifecycle.Queued, Created: true},
		"CancelReply":   CancelReply{Job: fixtureJob(), Requested: true, Acknowledged: true},
		"Cancelled":     Cancelled{JobID: "j1", State: lifecycle.Cancelled, Requested: true, Acknowledged: true},
		"ResolveReply":  ResolveReply{Job: fixtureJob(), Resolved: true},
		"Left":          Left{JobID: "j1", State: lifecycle.Running, Events: []Event{fixtureEvent()}},
		"GCReport":      GCReport{EndedBefore: t0, Removed: []RemovedJob{{JobID: "j1", State: lifecycle.Accepted, Ended: t1}}},
		"RemovedJob":    RemovedJob{JobID: "j1", State: lifecycle.Failed, Ended: t1},
		"DrainStatus":   DrainStatus{Draining: true, Deadline: t2, Running: []string{"j1"}},
		"DrainStarted":  DrainStarted{Deadline: t2, Running: []string{"j1"}, PID: 4242},
		"DrainReport":   DrainReport{Deadline: t2, Ended: []string{"j1"}, HandedBack: []string{"j2"}, Unsaid: []string{"j3"}, Exited: true, PID: 4242},
		"Result":        Result{Contract: contractResult, CertificatePath: "/h/sandboxes/j1/1/certificate.bin.zst", CertificateHost: "h1", CertificateLocation: "m1:/h/sandboxes/j1/1/certificate.bin.zst"},
		"Host":          Host{Host: "h1", Boot: "b-7", Generation: 9, Slots: 2, Started: t0, Home: "m1:/var/lib/cyber-supervisor", Running: []string{"j1/2"}, Self: true},
		"HostsReply":    HostsReply{Hosts: []Host{{Host: "h1", Boot: "b-7", Generation: 9, Slots: 2, Started: t0, Running: []string{}}}, Store: "bbolt"},
		"CapabilitiesReply": CapabilitiesReply{
			Capabilities: capabilities(),
			Limits:       Limits{DefaultMemoryBytes: 1 << 30, DefaultWallTimeMS: 3600000, MaxMemoryBytes: 4 << 30, MaxWallTimeMS: 7200000, MinMemoryBytes: 16 << 20, MemoryEnforced: true, DefaultRetries: 1},
			Host:         &HostReport{Isolation: "isolated", Probe: json.RawMessage(`{"cgroup_mode":"hybrid"}`)},
		},
		"Limits":        Limits{DefaultMemoryBytes: 1 << 30, DefaultWallTimeMS: 3600000, MaxMemoryBytes: 4 << 30, MaxWallTimeMS: 7200000, MinMemoryBytes: 16 << 20, DefaultRetries: 1},
		"HostReport":    HostReport{Isolation: "unisolated", Probe: json.RawMessage(`null`)},
		"CheckReport":   fixtureCheck(),
		"BackupMark":    *fixtureCheck().Backup,
		"RestoreFence":  *fixtureCheck().Fence,
		"RestoreReport": RestoreReport{From: "/backups/sup.db", Store: "/h/store/supervisor.db", KeptAside: "/h/store/supervisor.db.replaced-20261206T110000Z", Backup: fixtureCheck().Backup, Jobs: 10, Records: 120},
	}
	for name, v := range fencingFixtures() {
		fx[name] = v
	}
	for name, v := range dashboardFixtures() {
		fx[name] = v
	}
	for name, v := range changesFixtures() {
		fx[name] = v
	}
	return fx
}

// TestGoldenJSON marshals each fixture and compares it with its golden
// file: a renamed, dropped or re-typed field fails here.
func TestGoldenJSON(t *testing.T) {
	for name, v := range fixtures() {
		t.Run(name, func(t *testing.T) {
			golden.JSON(t, filepath.Join("testdata", name+".json"), v, *update,
				"a change clients see: list it in docs/supervisor.md, then go test -update")
		})
	}
}

// TestGoldenRoundTrip reads each golden file back into its type: a
// client decodes what the API writes, to the same value (Result is
// written only).
func TestGoldenRoundTrip(t *testing.T) {
	for name, v := range fixtures() {
		if name == "Result" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			p := reflect.New(reflect.TypeOf(v))
			if err := json.Unmarshal(raw, p.Interface()); err != nil {
				t.Fatalf("decode %s: %v", name, err)
			}
			again, err := json.MarshalIndent(p.Elem().Interface(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(append(again, '\n'), raw) {
				t.Errorf("%s does not decode to what it was:\n%s", name, again)
			}
		})
	}
}

// TestEveryTypeHasGoldenJSON: each exported type of the package has a
// fixture and a golden file, and each golden file a type.
func TestEveryTypeHasGoldenJSON(t *testing.T) {
	types := exportedTypes(t)
	fx := fixtures()
	for _, name := range types {
		if _, ok := fx[name]; !ok {
			t.Errorf("type %s has no fixture in fixtures()", name)
		}
		if _, err := os.Stat(filepath.Join("testdata", name+".json")); err != nil {
			t.Errorf("type %s has no golden file: %v", name, err)
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if _, ok := fx[name]; !ok {
			t.Errorf("%s is the golden file of no type", f)
		}
	}
	if len(types) == 0 {
		t.Fatal("no exported types found")
	}
}

// exportedTypes lists the package's exported type names from its source.
func exportedTypes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var names []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				if ts := s.(*ast.TypeSpec); ts.Name.IsExported() {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}
