package supervisor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch/launchtest"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

var workerBin, hostileBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sup-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	workerBin = filepath.Join(dir, "nox-worker")
	hostileBin = filepath.Join(dir, "hostileworker")
	bins := map[string]string{workerBin: "./cmd/nox-worker", filepath.Join(dir, "sandbox-gate"): "./cmd/sandbox-gate",
		hostileBin: "./internal/hostileworker"}
	for bin, pkg := range bins {
		if err := testbin.Build(root, pkg, bin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// requireIsolation skips, or with REQUIRE_ISOLATION=1 fails, where the
// host cannot isolate workers.
func requireIsolation(t testing.TB) { t.Helper(); testenv.RequireRoot(t) }

type testSup struct {
	*Supervisor
	home string
}

// open starts a supervisor with the real launcher on home.
func open(t testing.TB, home string, iso launch.Isolation, edit func(*Config)) *testSup {
	t.Helper()
	return openWith(t, home, iso, edit, nil)
}

// openWith is open with a look at the supervisor before it starts.
func openWith(t testing.TB, home string, iso launch.Isolation, edit func(*Config), before func(*Supervisor)) *testSup {
	t.Helper()
	return openLaunched(t, home, iso, nil, edit, before)
}

// openLaunched is openWith with a look at the launcher's configuration.
func openLaunched(t testing.TB, home string, iso launch.Isolation, editLauncher func(*launch.Config), edit func(*Config), before func(*Supervisor)) *testSup {
	t.Helper()
	ctx := context.Background()
	// The parent cgroup name is derived from the home, as in production:
	// two supervisors of one test process must not take each other's
	// groups for leftovers.
	lcfg := launch.Config{WorkerPath: workerBin, Home: home, Isolation: iso, PoolSize: 2}
	if editLauncher != nil {
		editLauncher(&lcfg)
	}
	l, err := launch.New(ctx, lcfg)
	if err != nil {
		if os.Getenv("REQUIRE_ISOLATION") == "1" || iso != launch.IsolationRequired {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	cfg := Config{Home: home, Slots: 2, Launcher: l, CancelGrace: time.Second}
	if edit != nil {
		edit(&cfg)
	}
	s, err := Open(ctx, cfg)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	if before != nil {
		before(s)
	}
	s.Start()
	t.Cleanup(func() {
		checkNoLeftovers(t, l.CgroupName())
		removeParentGroups(l.CgroupName())
	})
	return &testSup{Supervisor: s, home: home}
}

// removeParentGroups removes the (empty) parent groups a test's
// supervisor leaves, which every boot of a home shares.
func removeParentGroups(name string) { testenv.RemoveParentGroups(name) }

// checkNoLeftovers: once a test's supervisors are closed, no worker
// process and no cgroup below the test's parent group may remain.
func checkNoLeftovers(t testing.TB, cgroupName string) {
	t.Helper()
	left := testenv.WaitNoLeftovers(func() []string { return testenv.WorkerLeftovers(workerBin, cgroupName) }, 20*time.Millisecond)
	if left != nil {
		t.Errorf("left behind: %v", left)
	}
}

func (s *testSup) close(t testing.TB) {
	t.Helper()
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("close: %v", err)
	}
}

// spec encodes a job spec for a .nox program text (the launcher
// suite's encoding, with its default reduction limit).
func spec(t testing.TB, id string, op protocol.Operation, program string, inputs []uint64, lim protocol.Limits, edit func(*protocol.JobSpec)) []byte {
	t.Helper()
	return launchtest.JobWith(t, id, op, program, inputs, lim, edit)
}

func (s *testSup) submit(t testing.TB, b []byte) string {
	t.Helper()
	job, _, err := s.Submit(context.Background(), SubmitRequest{Spec: b})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return job.ID
}

func (s *testSup) wait(t testing.TB, id string) *JobStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := ""
	for {
		st, err := s.Wait(ctx, id, seen)
		if err != nil {
			t.Fatalf("wait %s: %v (last %s)", id, err, seen)
		}
		if st.Job.State.Terminal() {
			return st
		}
		seen = string(st.Job.State)
	}
}

func (s *testSup) waitState(t testing.TB, id string, want lifecycle.State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := ""
	for {
		st, err := s.Wait(ctx, id, seen)
		if err != nil {
			t.Fatalf("wait for %s to be %s: %v (last %s)", id, want, err, seen)
		}
		if st.Job.State == want {
			return
		}
		if st.Job.State.Terminal() {
			t.Fatalf("%s ended %s while waiting for %s", id, st.Job.State, want)
		}
		seen = string(st.Job.State)
	}
}

// acceptedCertificate reads the certificate accepted for the prove job
// id (st its status, res its result) from its sandbox.
func (s *testSup) acceptedCertificate(t testing.TB, id string, st *JobStatus, res *protocol.Result) []byte {
	t.Helper()
	dir, err := s.sandboxes.Open(id, st.Job.Accepted)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	b, err := dir.ReadFile(res.Artifact.Name, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storeCertificate stores body in the home's certificates and returns
// its ref.
func (s *Supervisor) storeCertificate(t testing.TB, body string) protocol.CertificateRef {
	t.Helper()
	b := []byte(body)
	ref := protocol.CertificateRef{SHA256: sha256.Sum256(b), Size: uint64(len(b))}
	if _, err := s.certs.Put(ref, bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	return ref
}

const add2 = "[5 [[0 2] [0 6]]]"

// loop turns a body F from integration/testdata into a job program that
// applies F to [F n] with n the job's single input.
func loop(t testing.TB, body string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "integration", "testdata", body))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.TrimSpace(string(b))
	return "[2 [[3 [[1 " + f + "] [0 2]]] [1 " + f + "]]]"
}
