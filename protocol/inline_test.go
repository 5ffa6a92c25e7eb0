package protocol

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// referenceJSON is the canonical form as encoding/json writes it whole:
// what MarshalJSON wrote before it wrote the artifact itself.
func referenceJSON(t testing.TB, s JobSpec) []byte {
	t.Helper()
	w := jobSpecWire{
		Contract: s.Contract, JobID: s.JobID, Operation: s.Operation, Profile: s.Profile,
		Program: programWire{Bundle: nonNilBytes(s.Program.Bundle)}, Inputs: decimals(nonNil(s.Inputs)),
		ExpectedOutput: decimals(s.ExpectedOutput), Limits: s.Limits.wire(), Artifact: s.Artifact,
	}
	if s.Program.Identity != nil {
		iw := s.Program.Identity.wire()
		w.Program.Identity = &iw
	}
	b, err := marshalCompact(w)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJobSpecJSONIsEncodingJSONs: MarshalJSON, AppendJSON, WriteJSON and
// CanonicalSHA256 give the bytes encoding/json gives for the whole spec,
// artifact or none, empty or of every length modulo 3.
func TestJobSpecJSONIsEncodingJSONs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	id := ProgramIdentity{Particle: [32]byte{1, 2, 3}}
	for i := range 40 {
		s := JobSpec{Contract: ContractV1, JobID: fmt.Sprintf("job-%d", i), Operation: OpVerify, Profile: ProfilePublicTrace,
			Program: ProgramSpec{Bundle: mustWrap(t, "a.nox", testFormula)}, Inputs: []uint64{uint64(i), 7},
			Limits: Limits{Reductions: 1000 + uint64(i), MemoryBytes: uint64(i) << 20}}
		switch i % 4 {
		case 0: // no artifact
		case 1:
			s.Artifact = []byte{}
		default:
			s.Artifact = make([]byte, rng.IntN(5000))
			for k := range s.Artifact {
				s.Artifact[k] = byte(rng.Uint32())
			}
		}
		if i%3 == 0 {
			s.Program.Identity, s.ExpectedOutput = &id, []uint64{1, 2, 3}
		}
		want := referenceJSON(t, s)
		got, err := s.MarshalJSON()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d: MarshalJSON %v\n%.300s\nwant\n%.300s", i, err, got, want)
		}
		prefix := []byte("x")
		if got, err := s.AppendJSON(prefix); err != nil || !bytes.Equal(got, append(prefix, want...)) {
			t.Fatalf("%d: AppendJSON %v", i, err)
		}
		var buf bytes.Buffer
		if err := s.WriteJSON(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("%d: WriteJSON %v", i, err)
		}
		if sum, err := s.CanonicalSHA256(); err != nil || sum != sha256.Sum256(want) {
			t.Fatalf("%d: CanonicalSHA256 %v", i, err)
		}
	}
}

// allocated is the number of bytes fn allocates on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestLargeArtifactIsNotCopied: a verify job's spec with a 4 MiB
// artifact inline (5.3 MiB of base64) is parsed, admitted and encoded
// with one copy of the artifact in each: the envelope's parse allocates
// nothing that grows with the spec, the spec's parse the decoded
// artifact, the canonical form its exact size. Before they were read in
// place and written at once, ParseSubmission allocated 4.0 times the
// spec, ParseJobSpec 4.75 times and MarshalJSON 3.0 times.
func TestLargeArtifactIsNotCopied(t *testing.T) {
	const size = 4 << 20
	art := make([]byte, size)
	for i := range art {
		art[i] = byte(i * 7)
	}
	s := JobSpec{Contract: ContractV1, JobID: "big", Operation: OpVerify, Profile: ProfilePublicTrace,
		Program: ProgramSpec{Bundle: mustWrap(t, "a.nox", testFormula)}, Limits: Limits{Reductions: 1000}, Artifact: art}
	spec, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"spec":` + string(spec) + `,"priority":1}`)
	const slack = 256 << 10 // the small parts: the tree, the bundle, the head
	var sub *Submission
	if n := allocated(func() { sub, err = ParseSubmission(body) }); err != nil || n > slack {
		t.Errorf("ParseSubmission: %v, %d bytes allocated for a %d-byte body", err, n, len(body))
	}
	var parsed *JobSpec
	if n := allocated(func() { parsed, err = ParseJobSpec(sub.Spec) }); err != nil || n > size+slack {
		t.Errorf("ParseJobSpec: %v, %d bytes allocated for a %d-byte artifact", err, n, size)
	}
	var again []byte
	if n := allocated(func() { again, err = parsed.MarshalJSON() }); err != nil || n > uint64(len(spec))+slack {
		t.Errorf("MarshalJSON: %v, %d bytes allocated for %d bytes", err, n, len(spec))
	}
	if !bytes.Equal(again, spec) {
		t.Error("the canonical form changed")
	}
	if n := allocated(func() { _, err = parsed.CanonicalSHA256() }); err != nil || n > slack {
		t.Errorf("CanonicalSHA256: %v, %d bytes allocated", err, n)
	}
}

// TestReadLocalFileReadsOnce: a certificate file is read into one buffer
// of its size (io.ReadAll, before, allocated 2.4 times a 4 MiB file),
// and one that grows while it is read is still read whole.
func TestReadLocalFileReadsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cert")
	want := bytes.Repeat([]byte{7}, 4<<20+3)
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	var got []byte
	var err error
	n := allocated(func() { got, err = ReadLocalFile("certificate", path, 16<<20, CodeArtifactTooLarge) })
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%v, %d bytes", err, len(got))
	}
	if n > uint64(len(want))+64<<10 {
		t.Errorf("%d bytes allocated for a %d-byte file", n, len(want))
	}
	grown, err := readSized(bytes.NewReader(want), 100)
	if err != nil || !bytes.Equal(grown, want) {
		t.Fatalf("a file larger than its size: %v, %d bytes", err, len(grown))
	}
}
