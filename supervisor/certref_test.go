package supervisor

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/race"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/certstore"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// A verify job by reference through the scheduler, unisolated (the
// worker reads the feed in its sandbox). Fails on main: artifact_ref is
// an unknown key.
func TestVerifyByReferenceAccepted(t *testing.T) {
	s := open(t, t.TempDir(), launch.IsolationOff, nil)
	defer s.close(t)
	verifyByReference(t, s)
}

// The same, jailed: the feed is a FIFO in the worker's own tmpfs, written
// by the supervisor from the home's store (REQUIRE_ISOLATION=1, real
// cgroups). Fails on main: artifact_ref is an unknown key.
func TestVerifyByReferenceAcceptedJailed(t *testing.T) {
	requireIsolation(t)
	s := open(t, t.TempDir(), launch.IsolationRequired, nil)
	defer s.close(t)
	verifyByReference(t, s)
}

// verifyByReference proves a job through s, stores its certificate in the
// home's store (twice: stored once) and runs verify jobs that name it:
// two of one certificate accepted (another computation's refused), one
// whose stored file has another digest proof_rejected, one whose file is
// missing refused at admission; gc removes the certificate with the last
// job that names it.
func verifyByReference(t *testing.T, s *testSup) {
	ctx := context.Background()
	prove := s.submit(t, spec(t, "p1", protocol.OpProve, add2, []uint64{3, 5}, protocol.Limits{}, nil))
	st := s.wait(t, prove)
	if st.Job.State != lifecycle.Accepted {
		t.Fatalf("prove: %s %+v", st.Job.State, st.Job.Error)
	}
	res, _ := protocol.ParseResult(st.Job.Result)
	certBytes := s.acceptedCertificate(t, prove, st, res)
	ref, err := s.certs.PutFile(bytes.NewReader(certBytes), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := s.certs.PutFile(bytes.NewReader(certBytes), 1<<20); err != nil || again != ref {
		t.Fatalf("second store: %v %v", again, err)
	}
	byRef := func(r protocol.CertificateRef) func(*protocol.JobSpec) {
		return func(js *protocol.JobSpec) { js.ArtifactRef = &r }
	}
	v1 := s.submit(t, spec(t, "v1", protocol.OpVerify, add2, []uint64{3, 5}, protocol.Limits{}, func(js *protocol.JobSpec) {
		byRef(ref)(js)
		js.ExpectedOutput = []uint64{8}
	}))
	v2 := s.submit(t, spec(t, "v2", protocol.OpVerify, add2, []uint64{3, 6}, protocol.Limits{}, byRef(ref)))

	// A file under the ref's name whose bytes have another digest: the
	// certificate is valid for the job, and still refused.
	forged := ref
	forged.SHA256[0] ^= 0xff
	if err := os.WriteFile(s.certs.Path(forged), certBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	v3 := s.submit(t, spec(t, "v3", protocol.OpVerify, add2, []uint64{3, 5}, protocol.Limits{}, byRef(forged)))

	// A ref whose certificate is not stored is refused at admission, and
	// nothing is stored of it.
	missing := ref
	missing.SHA256[1] ^= 0xff
	_, _, err = s.Submit(ctx, SubmitRequest{Spec: spec(t, "v4", protocol.OpVerify, add2, []uint64{3, 5}, protocol.Limits{}, byRef(missing))})
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeInvalidJob {
		t.Fatalf("submit of a missing certificate: %v, want invalid_job", err)
	}
	if _, err := s.Status(ctx, "v4"); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("v4 was stored: %v", err)
	}

	st = s.wait(t, v1)
	if st.Job.State != lifecycle.Accepted {
		t.Fatalf("v1: %s %+v", st.Job.State, st.Job.Error)
	}
	vres, err := protocol.ParseResult(st.Job.Result)
	if err != nil || vres.Verification == nil || vres.Verification.ArtifactSHA256 != ref.SHA256 || vres.Output[0] != 8 {
		t.Fatalf("v1 result %s (%v)", st.Job.Result, err)
	}
	if st = s.wait(t, v2); st.Job.State == lifecycle.Accepted || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeClaimMismatch {
		t.Fatalf("v2 (another computation): %s %+v", st.Job.State, st.Job.Error)
	}
	if st = s.wait(t, v3); st.Job.State != lifecycle.Rejected || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeProofRejected {
		t.Fatalf("v3 (another digest): %s %+v", st.Job.State, st.Job.Error)
	}
	if got := storedNames(t, s.home); !slices.Equal(got, sortedHex(ref, forged)) {
		t.Fatalf("store holds %v", got)
	}

	// gc of the accepted jobs (p1, v1) leaves the certificate v2 still
	// names; gc of the rest removes it and the forged one with v3.
	if _, err := s.GC(ctx, GCRequest{State: lifecycle.Accepted}); err != nil {
		t.Fatal(err)
	}
	if got := storedNames(t, s.home); !slices.Equal(got, sortedHex(ref, forged)) {
		t.Fatalf("after the first gc the store holds %v", got)
	}
	if _, err := s.GC(ctx, GCRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := storedNames(t, s.home); len(got) != 0 {
		t.Fatalf("after the last gc the store holds %v", got)
	}
}

func storedNames(t *testing.T, home string) []string {
	t.Helper()
	ents, err := os.ReadDir(certstore.Path(home))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func sortedHex(refs ...protocol.CertificateRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Hex())
	}
	slices.Sort(out)
	return out
}

// TestVerifyStoredStreams: the node's own check of a certificate by
// reference reads the stored file as it verifies it (spin(20)'s v2
// certificate stored uncompressed, 25 MB; spin(17), 3 MB, under the race
// detector): the heap it holds stays a small fraction of the file, where
// the inline check holds the certificate (logged side by side). Fails
// before: no verifyStored (a verify job had its certificate in its spec).
func TestVerifyStoredStreams(t *testing.T) {
	d := uint64(20)
	if race.Enabled || testing.Short() {
		d = 17
	}
	workPath := t.TempDir()
	spec, _, size := bigSpinJob(t, workPath, d)
	file, err := os.ReadFile(filepath.Join(workPath, "certificate.zst"))
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer certs.Close()
	ref, err := certs.PutFile(bytes.NewReader(file), uint64(size))
	if err != nil {
		t.Fatal(err)
	}
	spec.Operation, spec.ArtifactRef = protocol.OpVerify, &ref
	s := &Supervisor{cfg: Config{VerifyMemoryBytes: 64 << 20}, certs: certs, log: slog.New(slog.DiscardHandler)}
	expect, perr := s.expectFor(spec, nil)
	if perr != nil {
		t.Fatal(perr)
	}
	ctx := context.Background()
	var sum [32]byte
	grewStored := heapPeak(func() {
		_, _, sum, perr = s.verifySpecCertificate(ctx, spec, expect)
	})
	if perr != nil || sum != ref.SHA256 {
		t.Fatalf("stored: %v, digest %x", perr, sum)
	}
	// The inline check, for the figure: the bytes read, then verified.
	inline := *spec
	inline.ArtifactRef = nil
	file = nil
	grewInline := heapPeak(func() {
		b, err := os.ReadFile(certs.Path(ref))
		if err != nil {
			perr = protocol.Errorf(protocol.CodeIOError, "%v", err)
			return
		}
		inline.Artifact = b
		_, _, _, perr = s.verifySpecCertificate(ctx, &inline, expect)
	})
	if perr != nil {
		t.Fatalf("inline: %v", perr)
	}
	t.Logf("certificate %d bytes: heap grew by %d bytes verifying it stored, %d inline", size, grewStored, grewInline)
	if grewStored > uint64(size)/2 {
		t.Errorf("the heap grew by %d bytes verifying a stored certificate of %d: it grows with the certificate", grewStored, size)
	}
}
