package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch/launchtest"
)

// daemon is a running `cyber-supervisor serve`.
type daemon struct {
	cmd    *exec.Cmd
	home   string
	log    *testenv.Buffer // read while the daemon writes it
	done   chan error
	client *api.Client
}

// startDaemon starts serve on home; extra are more serve flags.
func startDaemon(t testing.TB, home string, slots int, extra ...string) *daemon {
	t.Helper()
	return startDaemonWith(t, home, slots, append([]string{"--log-level", "warn"}, extra...)...)
}

// startDaemonWith starts serve with more flags (a later --log-level wins).
func startDaemonWith(t testing.TB, home string, slots int, extra ...string) *daemon {
	t.Helper()
	return startDaemonWorker(t, home, slots, workerBin, extra...)
}

// startDaemonWorker starts a daemon whose workers run the binary worker.
func startDaemonWorker(t testing.TB, home string, slots int, worker string, extra ...string) *daemon {
	t.Helper()
	return startDaemonBin(t, supervisorBin, home, slots, worker, extra...)
}

// spawnDaemon starts serve of bin on home, isolated in this run's
// cgroup, with env added to its environment and args after serve's own
// flags; it does not wait for it to answer. Whatever happens to the test,
// the daemon does not outlive it.
func spawnDaemon(t testing.TB, bin, home string, env []string, args ...string) *daemon {
	t.Helper()
	d := &daemon{home: home, log: &testenv.Buffer{}, done: make(chan error, 1), client: api.NewClient(supervisor.SocketPath(home))}
	d.cmd = exec.Command(bin, append([]string{"--home", home, "serve", "--isolation", "required", "--cgroup-name", envOf(home).cgroup}, args...)...)
	if env != nil {
		d.cmd.Env = append(os.Environ(), env...)
	}
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
	})
	return d
}

// startDaemonBin starts a daemon of the supervisor binary bin (another
// build's, for a side-by-side benchmark) whose workers run worker.
func startDaemonBin(t testing.TB, bin, home string, slots int, worker string, extra ...string) *daemon {
	t.Helper()
	return startDaemonEnv(t, bin, home, slots, worker, nil, extra...)
}

// startDaemonEnv is startDaemonBin with env added to the daemon's
// environment (GOMAXPROCS, for one).
func startDaemonEnv(t testing.TB, bin, home string, slots int, worker string, env []string, extra ...string) *daemon {
	t.Helper()
	d := spawnDaemon(t, bin, home, env, append([]string{"--worker", binFor(home, worker), "--slots", fmt.Sprint(slots)}, extra...)...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("unix", supervisor.SocketPath(home))
		if err == nil {
			c.Close()
			if _, err := d.client.List(context.Background(), ""); err == nil {
				return d
			}
		}
		select {
		case err := <-d.done:
			t.Fatalf("daemon exited: %v\n%s", err, d.log)
		default:
		}
		if time.Now().After(deadline) {
			d.kill9()
			t.Fatalf("daemon did not come up\n%s", d.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill9 crashes the daemon (SIGKILL, no cleanup of its own).
func (d *daemon) kill9() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// stop asks for a clean shutdown.
func (d *daemon) stop(t testing.TB) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("daemon exit: %v\n%s", err, d.log)
		}
	case <-time.After(30 * time.Second):
		d.kill9()
		t.Errorf("daemon did not stop on SIGTERM\n%s", d.log)
	}
}

func jobSpec(t testing.TB, id string, op protocol.Operation, program string, inputs []uint64, lim protocol.Limits) []byte {
	t.Helper()
	return jobSpecWith(t, id, op, program, inputs, lim, nil)
}

// jobSpecWith is launchtest.JobWith with a reduction budget no test job
// reaches unless it runs on purpose until it is stopped.
func jobSpecWith(t testing.TB, id string, op protocol.Operation, program string, inputs []uint64, lim protocol.Limits, edit func(*protocol.JobSpec)) []byte {
	t.Helper()
	if lim.Reductions == 0 {
		lim.Reductions = 1 << 40
	}
	return launchtest.JobWith(t, id, op, program, inputs, lim, edit)
}

func TestSecondServeIsRefused(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	cmd := exec.Command(supervisorBin, "--home", home, "serve", "--worker", workerBin, "--cgroup-name", cgroupName)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(string(out), "another cyber-supervisor") {
		t.Fatalf("second serve: %v (exit %v)\n%s", err, ee, out)
	}
}

func TestSocketRefusesOtherUsers(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 1)
	defer d.stop(t)
	sock := supervisor.SocketPath(home)
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v", st.Mode(), err)
	}
	// The home is its owner's alone (0700): another uid cannot reach the
	// socket, and is told so, not that there is no daemon to talk to.
	for p := filepath.Dir(home); p != "/" && p != "/tmp"; p = filepath.Dir(p) {
		os.Chmod(p, 0o755)
	}
	pub := filepath.Join(filepath.Dir(home), "cyber-supervisor")
	copyFile(t, supervisorBin, pub)
	other := func() (protocol.Envelope, int) {
		t.Helper()
		cmd := exec.Command(pub, "--home", home, "list", "--format", "json")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, _ := cmd.Output()
		var env protocol.Envelope
		if err := json.Unmarshal(out, &env); err != nil || env.Error == nil {
			t.Fatalf("other uid: %q: %v", out, err)
		}
		return env, cmd.ProcessState.ExitCode()
	}
	if env, code := other(); env.Error.Code != protocol.CodeForbidden || code != 1 ||
		!strings.Contains(env.Error.Message, sock+": permission denied") || strings.Contains(env.Error.Message, "no daemon") {
		t.Fatalf("other uid, home 0700: exit %d %+v", code, env.Error)
	}
	// Even with the file and the path to it opened up, the peer-credential
	// check refuses a client of another uid.
	os.Chmod(home, 0o755)
	os.Chmod(sock, 0o666)
	if env, code := other(); env.Error.Code != protocol.CodeForbidden || code != 1 || !strings.Contains(env.Error.Message, "only the supervisor's owner or root") {
		t.Fatalf("other uid was not refused: exit %d %+v", code, env.Error)
	}
	// The owner still gets in.
	if _, err := d.client.List(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
}

// TestCrashRecovery: 50 jobs, the daemon killed with SIGKILL at random
// moments over 20 rounds, restarted each time. In the end every job is
// terminal or unknown, none is accepted twice, accepted certificates
// verify, and nothing of the workers is left.
func TestCrashRecovery(t *testing.T) {
	requireIsolation(t)
	home := parallelHome(t)
	d := startDaemon(t, home, 2)
	ctx := context.Background()
	spin := program(t, "spin.nox")
	var ids []string
	for i := range 50 {
		id := fmt.Sprintf("crash-%02d", i)
		var b []byte
		switch i % 3 {
		case 0:
			b = jobSpec(t, id, protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{uint64(i), 1}, protocol.Limits{})
		case 1:
			b = jobSpec(t, id, protocol.OpProve, spin, []uint64{uint64(8 + i%5)}, protocol.Limits{})
		default:
			b = jobSpec(t, id, protocol.OpExecute, spin, []uint64{uint64(12 + i%6)}, protocol.Limits{})
		}
		retry := &apitypes.RetryRequest{MaxAttempts: uint32(1 + i%3)}
		if _, err := d.client.Submit(ctx, b, 0, retry); err != nil {
			t.Fatalf("submit %s: %v", id, err)
		}
		ids = append(ids, id)
	}
	for round := range 20 {
		time.Sleep(time.Duration(20+(round*37)%250) * time.Millisecond)
		d.kill9()
		d = startDaemon(t, home, 2)
	}
	deadline := time.Now().Add(3 * time.Minute)
	states := map[string]int{}
	defer func() { t.Logf("after 20 kill -9 rounds: %v", states) }()
	for _, id := range ids {
		for {
			st, err := d.client.Status(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if st.Job.State.Terminal() {
				checkJob(t, home, st)
				states[string(st.Job.State)]++
				for _, a := range st.Attempts {
					if a.State == "unknown" {
						states["unknown attempts"]++
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still %s", id, st.Job.State)
			}
			d.client.Wait(ctx, id, string(st.Job.State))
		}
	}
	d.stop(t)
	// No temporary or partial file survives under any sandbox.
	filepath.WalkDir(filepath.Join(home, "sandboxes"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && !strings.HasSuffix(p, ".zst") {
			t.Errorf("stray file %s", p)
		}
		return nil
	})
}

// checkJob: at most one accepted attempt, and an accepted certificate
// is complete and verifies.
func checkJob(t *testing.T, home string, st *apitypes.JobStatus) {
	t.Helper()
	accepted := 0
	for _, a := range st.Attempts {
		if a.State == "accepted" {
			accepted++
		}
	}
	if accepted > 1 || (st.Job.State == "accepted") != (accepted == 1) {
		t.Fatalf("%s: state %s with %d accepted attempts", st.Job.JobID, st.Job.State, accepted)
	}
	if st.Job.State != "accepted" || st.Job.Operation != "prove" {
		return
	}
	res, err := protocol.ParseResult(st.Job.Result)
	if err != nil || res.Artifact == nil {
		t.Fatalf("%s: result %v", st.Job.JobID, err)
	}
	p := filepath.Join(home, "sandboxes", st.Job.JobID, fmt.Sprint(st.Job.AcceptedAttempt), res.Artifact.Name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: accepted certificate missing: %v", st.Job.JobID, err)
	}
	out, err := exec.Command(binFor(home, workerBin), "verify", p, "--budget", fmt.Sprint(uint64(1)<<40), "--format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("%s: certificate does not verify: %v\n%s", st.Job.JobID, err, out)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestWorkersDieWithTheDaemon: a daemon killed with SIGKILL takes its
// workers with it — the one running a job and the warm ones waiting for
// one — instead of leaving them, jailed under an unprivileged uid, to
// spin until the next start sweeps their groups. The init's switch to the
// worker's uid clears the parent-death signal the launch armed; the init
// arms it again.
func TestWorkersDieWithTheDaemon(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemonWorker(t, home, 2, workerBin, "--log-level", "warn")
	b := jobSpec(t, "orphan", protocol.OpExecute, program(t, "spin.nox"), []uint64{64}, protocol.Limits{Reductions: 1 << 62})
	if _, err := d.client.Submit(context.Background(), b, 0, nil); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, d, "orphan", 0)
	// The running worker and the warm pool's (2 slots: 2 warm ones, one
	// of which may still be starting): each is PID 1 of its namespace.
	var workers []int
	for deadline := time.Now().Add(20 * time.Second); len(workers) < 2; {
		workers = jailedChildren(d.cmd.Process.Pid)
		if time.Now().After(deadline) {
			t.Fatalf("the daemon has %d jailed workers, want at least 2", len(workers))
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.kill9()
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range workers {
		for processAlive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("worker %d outlived its daemon (killed with SIGKILL)", pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The next start removes the groups the crash left (and kills what
	// is in them); a clean stop then leaves nothing (newHome's check).
	d = startDaemonWorker(t, home, 2, workerBin, "--log-level", "warn")
	d.stop(t)
}

// jailedChildren is the children of pid that are PID 1 of a PID
// namespace of their own: the daemon's jailed workers.
func jailedChildren(pid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var ppid int
		var nspid []string
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				fmt.Sscan(v, &ppid)
			}
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				nspid = strings.Fields(v)
			}
		}
		if ppid == pid && len(nspid) == 2 && nspid[1] == "1" {
			var child int
			fmt.Sscan(nspid[0], &child)
			out = append(out, child)
		}
	}
	return out
}

// processAlive: pid exists and is not a zombie.
func processAlive(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !isZombie(st)
}
