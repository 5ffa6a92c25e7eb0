package supervisor

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// A certificate stored for a submission that failed or was never made is
// named by no job; gc removes it once it was stored before the
// collection's cutoff and at least certificateGrace ago, and never one a
// job still names or one stored again since. Fails before: gc removed a
// stored certificate only with a job that named it, so the unnamed ones
// stayed for ever.
func TestGCRemovesUnnamedCertificates(t *testing.T) {
	s := open(t, t.TempDir(), launch.IsolationOff, nil)
	defer s.close(t)
	ctx := context.Background()
	put := func(body string, age time.Duration) protocol.CertificateRef {
		t.Helper()
		ref := s.storeCertificate(t, body)
		at := time.Now().Add(-age)
		if err := os.Chtimes(s.certs.Path(ref), at, at); err != nil {
			t.Fatal(err)
		}
		return ref
	}
	old := put("stored two days ago, named by no job", 48*time.Hour)
	recent := put("stored two hours ago, named by no job", 2*time.Hour)
	named := put("stored two days ago, named by a job", 48*time.Hour)
	v := s.submit(t, spec(t, "v", protocol.OpVerify, add2, []uint64{3, 5}, protocol.Limits{}, func(js *protocol.JobSpec) {
		js.ArtifactRef = &named
	}))
	if st := s.wait(t, v); st.Job.State != lifecycle.Rejected {
		t.Fatalf("v (its certificate is not one): %s %+v", st.Job.State, st.Job.Error)
	}
	stored := func(want ...protocol.CertificateRef) {
		t.Helper()
		if got := storedNames(t, s.home); !slices.Equal(got, sortedHex(want...)) {
			t.Fatalf("store holds %v, want %v", got, sortedHex(want...))
		}
	}

	// A collection of one state removes jobs, not unnamed certificates.
	if _, err := s.GC(ctx, GCRequest{State: lifecycle.Accepted}); err != nil {
		t.Fatal(err)
	}
	stored(old, recent, named)

	// Retention of a day: the unnamed certificate stored two days ago
	// goes; the one of two hours and the one v names stay.
	if _, err := s.GC(ctx, GCRequest{OlderThan: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	stored(recent, named)

	// Stored again (a new submission's CLI): as young as a new one, so a
	// collection of the jobs that ended an hour ago keeps it and removes
	// only the unnamed certificate of two hours not stored again (v ended
	// just now: it and its certificate stay).
	again := put("also stored two hours ago, named by no job", 2*time.Hour)
	if _, err := s.certs.Put(recent, bytes.NewReader([]byte("stored two hours ago, named by no job"))); err != nil {
		t.Fatal(err)
	}
	stored(recent, named, again)
	if _, err := s.GC(ctx, GCRequest{OlderThan: time.Hour}); err != nil {
		t.Fatal(err)
	}
	stored(recent, named)
}
