package supervisor

import (
	"bytes"
	"encoding/base64"
	"reflect"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

func allCaps() protocol.Capabilities {
	return protocol.Capabilities{Backend: "nox-worker", BackendVersion: "0", Contracts: []string{protocol.ContractV1}, VM: "nox",
		ProofKinds: []string{protocol.ProfilePublicTrace, protocol.ProfileNone},
		Operations: []protocol.Operation{protocol.OpExecute, protocol.OpProve, protocol.OpVerify},
		Limits:     protocol.EnforcedLimits{Reductions: true, WallTime: true, Memory: true, ArtifactBytes: true, Cancellation: true, Pids: true}}
}

// TestFrozenIsWhatTheStoreHolds: what an attempt takes from the cache is
// exactly what it would read back from the frozen spec the store holds —
// the parsed spec, and the program tokens and identity verification
// derives from its bundle.
func TestFrozenIsWhatTheStoreHolds(t *testing.T) {
	lim := protocol.Limits{Reductions: 100, WallTimeMS: 5, MemoryBytes: 1 << 20, ArtifactBytes: 1 << 10}
	specs := [][]byte{
		spec(t, "e", protocol.OpExecute, add2, []uint64{3, 5}, lim, nil),
		spec(t, "n", protocol.OpExecute, "[5 [[0 2] [0 6]]]", nil, protocol.Limits{}, func(s *protocol.JobSpec) {
			s.Profile, s.ExpectedOutput = protocol.ProfileNone, []uint64{8}
		}),
		spec(t, "p", protocol.OpProve, "[2 [[0 1] [1 [0 1]]]]", []uint64{}, lim, nil),
		spec(t, "v", protocol.OpVerify, add2, []uint64{1, 2}, lim, func(s *protocol.JobSpec) { s.Artifact = []byte{1, 2, 3} }),
		// Spelling the canonical form changes: key order, a declared
		// identity, null options, n-ary brackets.
		[]byte(`{"limits":{"reductions":"7"},"inputs":["1","2"],"expected_output":null,"artifact":null,"state_context":null,` +
			`"program":{"bundle":"` + b64(`{"target_vm":"nox","assembly":"[5 [0 2] [0 6]]"}`) + `"},` +
			`"profile":"` + protocol.ProfilePublicTrace + `","operation":"execute","job_id":"raw","contract":"` + protocol.ContractV1 + `"}`),
	}
	for _, raw := range specs {
		adm, err := protocol.Admit(raw, allCaps())
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		c := newFrozenSpecs(4)
		c.admitted(adm, sha256hex(adm.Canonical))
		f := c.get(adm.Spec.JobID, sha256hex(adm.Canonical))
		if f == nil {
			t.Fatalf("%s: not cached", adm.Spec.JobID)
		}
		stored, err := protocol.ParseJobSpec(adm.Canonical)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(f.spec, stored) {
			t.Errorf("%s: cached spec\n%+v\nread back\n%+v", adm.Spec.JobID, f.spec, stored)
		}
		prog, err := protocol.ParseBundle(stored.Program.Bundle)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.program.tokens, prog.Tokens) || f.program.identity != prog.Identity() {
			t.Errorf("%s: cached program differs from the saved bundle's", adm.Spec.JobID)
		}
	}
}

// TestFrozenAnswersOnlyForItsBytes: another spec digest under the same
// id (an earlier boot's job, a different payload) and ended jobs are
// misses.
func TestFrozenAnswersOnlyForItsBytes(t *testing.T) {
	adm, err := protocol.Admit(spec(t, "x", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil), allCaps())
	if err != nil {
		t.Fatal(err)
	}
	c := newFrozenSpecs(1)
	x := sha256hex(adm.Canonical)
	c.admitted(adm, x)
	other := sha256hex(append(bytes.Clone(adm.Canonical), ' '))
	if c.get("x", other) != nil || c.get("y", x) != nil || c.canonical("x", other) != nil {
		t.Fatal("answered for other bytes or another id")
	}
	if !bytes.Equal(c.canonical("x", x), adm.Canonical) {
		t.Fatal("the frozen spec is not kept")
	}
	adm2, err := protocol.Admit(spec(t, "z", protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil), allCaps())
	if err != nil {
		t.Fatal(err)
	}
	z := sha256hex(adm2.Canonical)
	c.admitted(adm2, z) // beyond the bound: x goes
	if c.get("x", x) != nil || c.get("z", z) == nil {
		t.Fatal("bound not kept")
	}
	c.ended("z")
	if c.get("z", z) != nil || c.bytes != 0 {
		t.Fatalf("an ended job is still cached (%d bytes)", c.bytes)
	}
}

// TestFrozenBoundsItsBytes: entries are kept while their bytes (spec,
// artifact, bundle, tokens) fit maxBytes together; one that would pass
// it is not kept, and an ended job's bytes make room again. A queue of
// verify jobs with large artifacts holds at most maxBytes of them.
func TestFrozenBoundsItsBytes(t *testing.T) {
	admit := func(id string, n int) (*protocol.AdmittedJob, string) {
		adm, err := protocol.Admit(spec(t, id, protocol.OpVerify, add2, []uint64{1, 2}, protocol.Limits{},
			func(s *protocol.JobSpec) { s.Artifact = make([]byte, n) }), allCaps())
		if err != nil {
			t.Fatal(err)
		}
		return adm, sha256hex(adm.Canonical)
	}
	c := newFrozenSpecs(100)
	c.maxBytes = 1 << 20
	a, da := admit("a", 300<<10) // about 700 KiB with its spec
	b, db := admit("b", 300<<10)
	c.admitted(a, da)
	c.admitted(b, db)
	if c.get("a", da) == nil || c.get("b", db) != nil {
		t.Fatalf("a kept %v, b kept %v: want a only", c.get("a", da) != nil, c.get("b", db) != nil)
	}
	if c.bytes > c.maxBytes {
		t.Fatalf("%d bytes held, at most %d", c.bytes, c.maxBytes)
	}
	c.ended("a")
	c.admitted(b, db)
	if c.get("b", db) == nil {
		t.Fatal("no room made by an ended job")
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
