package supervisor

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The hostile worker (internal/hostileworker) is launched through the real
// launcher in place of nox-worker. The launcher is made with the real
// worker (its start describes one), then every attempt's launch uses the
// hostile binary, installed under the name that selects its attack.

// hostileSup is a supervisor whose attempts run the hostile worker with
// attack, on a fresh short home (so that its socket dir is <home>/run and
// the attack's target resolves to <home>/target.sock).
//
// extra syscalls are allowed beyond the workers' seccomp allowlist: the
// socket attacks need symlinks, links and renames, which the allowlist
// alone already denies; with them allowed the tests reach the defense
// behind it, the supervisor's socket pinning.
func hostileSup(t *testing.T, attack string, extra ...string) (*testSup, string) {
	t.Helper()
	e := hostileEnvFor(t, attack, extra...)
	return e.s, e.home
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// hostTarget stands for a host daemon's socket: it counts connections.
type hostTarget struct {
	path string
	hits atomic.Int64
}

func listenTarget(t *testing.T, path string) *hostTarget {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ht := &hostTarget{path: path}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ht.hits.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return ht
}

// untouched fails the test if anything but the test itself connected to
// the target; it then proves that the target does count a connection.
func (ht *hostTarget) untouched(t *testing.T) {
	t.Helper()
	if n := ht.hits.Load(); n != 0 {
		t.Fatalf("the supervisor connected to the host socket %d times", n)
	}
	c, err := net.Dial("unix", ht.path)
	if err != nil {
		t.Fatalf("the target does not listen: %v", err)
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for ht.hits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if ht.hits.Load() != 1 {
		t.Fatal("the target did not count the test's own connection")
	}
}

func retrying(t *testing.T, s *testSup, id string) string {
	t.Helper()
	b := spec(t, id, protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil)
	job, _, err := s.Submit(context.Background(), SubmitRequest{Spec: b,
		Retry: &store.RetryPolicy{MaxAttempts: 3, Retryable: []protocol.Code{protocol.CodeInternalError}}})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return job.ID
}

// assertRefused: the attempt failed as hostile, once, without a retry
// although the job's policy retries internal_error.
func assertRefused(t *testing.T, st *JobStatus, why string) {
	t.Helper()
	j := st.Job
	if j.State != lifecycle.Failed || j.Error == nil || j.Error.Code != protocol.CodeInternalError ||
		!strings.Contains(j.Error.Message, "worker refused") || !strings.Contains(j.Error.Message, why) {
		t.Fatalf("job %s: state %s error %+v, want failed internal_error \"worker refused ... %s\"", j.ID, j.State, j.Error, why)
	}
	if j.Error.Retryable || j.Attempts != 1 || len(st.Attempts) != 1 {
		t.Fatalf("job %s: retryable %v after %d attempts; a hostile worker must not be retried", j.ID, j.Error.Retryable, j.Attempts)
	}
}

// socketAttackSyscalls stage the socket attacks; nox-worker never calls
// them, and the production allowlist denies them.
var socketAttackSyscalls = []string{"symlinkat", "linkat", "renameat"}

// Under the production allowlist the socket attacks cannot even be
// staged: the worker's symlink, link and rename fail with EPERM, it exits
// before its handshake, and nothing reaches the host socket.
func TestHostileWorkerSocketAttacksDeniedBySeccomp(t *testing.T) {
	for _, attack := range []string{"socket-symlink", "socket-hardlink", "socket-swap"} {
		t.Run(attack, func(t *testing.T) {
			e := hostileEnvFor(t, attack)
			target := listenTarget(t, filepath.Join(e.home, "target.sock"))
			st := e.s.wait(t, submitExecute(t, e.s, "denied"))
			if st.Job.State != lifecycle.Failed || st.Job.Error == nil || st.Job.Error.Code != protocol.CodeInternalError {
				t.Fatalf("job: %s %+v, want failed: the worker never started serving", st.Job.State, st.Job.Error)
			}
			// Evidence that the staging was tried and refused.
			e.log.WaitText(t, "prepare the attack: ")
			if got := e.log.All(); !strings.Contains(got, "operation not permitted") {
				t.Errorf("the worker's stderr %q, want its EPERM", got)
			}
			e.s.close(t)
			target.untouched(t)
		})
	}
}

func submitExecute(t *testing.T, s *testSup, id string) string {
	t.Helper()
	return s.submit(t, spec(t, id, protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil))
}

func TestHostileWorkerSocketSymlink(t *testing.T) {
	s, home := hostileSup(t, "socket-symlink", socketAttackSyscalls...)
	target := listenTarget(t, filepath.Join(home, "target.sock"))
	assertRefused(t, s.wait(t, retrying(t, s, "symlink")), "is a symlink")
	s.close(t)
	target.untouched(t)
}

func TestHostileWorkerSocketHardlink(t *testing.T) {
	s, home := hostileSup(t, "socket-hardlink", socketAttackSyscalls...)
	target := listenTarget(t, filepath.Join(home, "target.sock"))
	assertRefused(t, s.wait(t, retrying(t, s, "hardlink")), "has 2 links")
	s.close(t)
	target.untouched(t)
}

// The swapping worker wins or loses the race by chance: either the
// supervisor pinned the symlink (refused) or the worker's own socket (the
// job runs on it). It never reaches the host socket.
func TestHostileWorkerSocketSwap(t *testing.T) {
	s, home := hostileSup(t, "socket-swap", socketAttackSyscalls...)
	target := listenTarget(t, filepath.Join(home, "target.sock"))
	var ids []string
	for i := range 8 {
		ids = append(ids, retrying(t, s, "swap-"+string(rune('a'+i))))
	}
	outcomes := map[lifecycle.State]int{}
	for _, id := range ids {
		st := s.wait(t, id)
		outcomes[st.Job.State]++
		switch st.Job.State {
		case lifecycle.Accepted:
			if res, err := protocol.ParseResult(st.Job.Result); err != nil || len(res.Output) != 1 || res.Output[0] != 8 {
				t.Errorf("job %s accepted with result %s (%v), want output [8]", id, st.Job.Result, err)
			}
		default:
			assertRefused(t, st, "is a symlink")
		}
	}
	t.Logf("outcomes of 8 swapping workers: %v", outcomes)
	s.close(t)
	target.untouched(t)
}

// The honest mode of the same binary runs jobs: the harness itself is not
// what fails the attacks above.
func TestHostileWorkerHonestControl(t *testing.T) {
	s, home := hostileSup(t, "honest")
	target := listenTarget(t, filepath.Join(home, "target.sock"))
	st := s.wait(t, retrying(t, s, "honest"))
	if st.Job.State != lifecycle.Accepted {
		t.Fatalf("honest worker: %s %+v", st.Job.State, st.Job.Error)
	}
	s.close(t)
	target.untouched(t)
}
