package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	etcdstore "github.com/cyberia-to/cyber-supervisor/supervisor/store/etcd"
)

// A start removes the sandboxes its store says are done with (an ended
// job's attempt that is not its accepted certificate, a job its gc
// removed) and keeps every sandbox of a job it does not know: another
// store's (the home served on etcd, or on its own store before), whose
// certificate only that store's gc may remove. It used to remove them.
// The home served on etcd, so it has the shared mark: without it a
// sandbox of a job the store never knew is taken for a restore's
// evidence (TestRestoreRunsNothingTwice).
func TestStartKeepsSandboxesOfJobsItsStoreDoesNotKnow(t *testing.T) {
	home := t.TempDir()
	s, _ := openStub(t, home, nil)
	ctx := context.Background()
	submit := func(id string) {
		t.Helper()
		if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, id, protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil)}); err != nil {
			t.Fatal(err)
		}
	}
	submit("failed")
	endStub(t, s, protocol.Errorf(protocol.CodeBudgetExhausted, "x"), lifecycle.Failed)
	submit("collected")
	endStub(t, s, nil, "")
	if rep, err := s.GC(ctx, GCRequest{State: lifecycle.Accepted}); err != nil || len(rep.Removed) != 1 {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	s.Close(ctx)
	// What the sweep finds: sandboxes left by a crash, and one of a job
	// this store never had.
	sandbox := func(job string) string {
		p := filepath.Join(SandboxDir(home), job, "1", "certificate.cnxt.zst")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("kept"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	failed, collected, foreign := sandbox("failed"), sandbox("collected"), sandbox("elsewhere")
	if err := markShared(home); err != nil {
		t.Fatal(err)
	}

	_, logs := openStub(t, home, nil)
	for _, p := range []string{failed, collected} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the start kept a sandbox its store is done with (%v)", p, err)
		}
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("the start removed the sandbox of a job its store does not know: %v", err)
	}
	if !strings.Contains(logs.String(), "sandboxes_removed=2") || !strings.Contains(logs.String(), "sandboxes_of_unknown_jobs_kept=1") {
		t.Errorf("the start's log:\n%s", logs)
	}
}

// A home whose own store holds jobs is not switched to a shared store
// silently: Open refuses (ErrLocalJobs, naming the way out), and with
// KeepLocalJobs serves, leaving them where they are.
func TestSharedStoreRefusesAHomeWithJobs(t *testing.T) {
	home := t.TempDir()
	s, _ := openStub(t, home, nil)
	ctx := context.Background()
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "mine", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil)}); err != nil {
		t.Fatal(err)
	}
	s.Close(ctx)
	srv := etcdtest.Start(t, etcdtest.Options{})
	onEtcd := func(keep bool) (*Supervisor, error) {
		trust := store.NewTrust()
		st, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: "/home-jobs/", RequestTimeout: 2 * time.Second, Trust: trust})
		if err != nil {
			t.Fatal(err)
		}
		return Open(ctx, Config{Home: home, Slots: 1, Launcher: stubLauncher{}, Store: st, Trust: trust, HostID: "h", KeepLocalJobs: keep})
	}
	if sup, err := onEtcd(false); !errors.Is(err, ErrLocalJobs) || !strings.Contains(err.Error(), "--keep-local-jobs") || !strings.Contains(err.Error(), "mine") {
		if sup != nil {
			sup.Close(ctx)
		}
		t.Fatalf("Open on etcd of a home whose own store holds a job: %v", err)
	}
	sup, err := onEtcd(true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sup.Status(ctx, "mine"); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("the shared store knows the home's own job: %v", err)
	}
	sup.Close(ctx)
	s, _ = openStub(t, home, nil)
	if st, err := s.Status(ctx, "mine"); err != nil || st.Job.State != lifecycle.Queued {
		t.Fatalf("the home's own job after serving on etcd: %+v %v", st, err)
	}
}

// The certificates directory is the home's, shared by its own store and a
// cluster's: a collection on the shared store keeps a certificate that
// only a job of the home's own store names (it runs when the home serves
// its own store again), and removes an unnamed one. Fails before:
// nothing unnamed was removed.
func TestSharedStoreGCKeepsCertificatesOfTheHomesOwnJobs(t *testing.T) {
	home := t.TempDir()
	s, _ := openStub(t, home, nil)
	ctx := context.Background()
	mine, unnamed := s.storeCertificate(t, "named by the home's own job"), s.storeCertificate(t, "named by no job")
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "mine", protocol.OpVerify, add2, []uint64{3, 5}, protocol.Limits{}, func(js *protocol.JobSpec) {
		js.ArtifactRef = &mine
	})}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, ref := range []protocol.CertificateRef{mine, unnamed} {
		if err := os.Chtimes(s.certs.Path(ref), old, old); err != nil {
			t.Fatal(err)
		}
	}
	s.Close(ctx)

	srv := etcdtest.Start(t, etcdtest.Options{})
	trust := store.NewTrust()
	st, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: "/home-certs/", RequestTimeout: 2 * time.Second, Trust: trust})
	if err != nil {
		t.Fatal(err)
	}
	sup, err := Open(ctx, Config{Home: home, Slots: 1, Launcher: stubLauncher{}, Store: st, Trust: trust, HostID: "h", KeepLocalJobs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close(ctx)
	if _, err := sup.GC(ctx, GCRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := storedNames(t, home); !slices.Equal(got, sortedHex(mine)) {
		t.Fatalf("after the shared store's gc the home's certificates are %v, want only %s (not the unnamed %s)", got, mine.Hex(), unnamed.Hex())
	}
}
