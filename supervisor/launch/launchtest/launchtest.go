// Package launchtest is the conformance suite of launch.Launcher: what
// every launcher must do, and what it declares in its Capabilities, each
// checked on real workers (the way Nomad's drivers share one test
// harness). A launcher's own tests call Run with a Harness that makes it
// and names what of its workers is left on the host.
package launchtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
)

// Harness is what the suite needs of one launcher implementation.
type Harness struct {
	// New makes the launcher under test, on a home of its own. The suite
	// closes it.
	New func(t *testing.T) launch.Launcher
	// Leftovers names what of l's workers is still on the host
	// (processes, cgroups, mounts): nothing once every worker is closed.
	Leftovers func(l launch.Launcher) []string
}

// hangGuard bounds every wait of the suite: a launcher that never
// returns fails the test instead of hanging it. It is no timing
// requirement; an honest launcher answers in milliseconds.
const hangGuard = 2 * time.Minute

// Run runs the suite against h's launcher: one launcher for all the
// checks, each check leaving nothing behind.
func Run(t *testing.T, h Harness) {
	l := h.New(t)
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close the launcher: %v", err)
		}
		noLeftovers(t, h, l)
	})
	caps := l.Capabilities()
	if err := caps.Worker.Validate(); err != nil {
		t.Fatalf("declared worker capabilities: %v", err)
	}
	// A warm pool's workers live until the launcher closes, and are not
	// told apart from what a closed worker left: with one, only the
	// launcher's Close is checked for leftovers.
	c := &check{h: h, l: l, caps: caps, warmed: caps.Warm}
	// What earlier boots left goes first, as at a supervisor's start.
	t.Run("RemoveLeftovers", c.removeLeftovers)
	t.Run("Describe", c.describe)
	t.Run("RunsAJob", c.runsAJob)
	t.Run("LaunchAfterItsDeadline", c.launchAfterDeadline)
	t.Run("KillEndsTheRun", c.killEndsTheRun)
	t.Run("Cancellation", c.cancellation)
	t.Run("MemoryLimit", c.memoryLimit)
	t.Run("OwnWorkDirs", c.ownWorkDirs)
	t.Run("Host", c.host)
	t.Run("Warm", c.warm)
}

type check struct {
	h    Harness
	l    launch.Launcher
	caps launch.Capabilities
	// warmed: the launcher keeps warm workers, live until it closes;
	// only its Close is checked for leftovers.
	warmed bool
}

func (c *check) noLeftovers(t *testing.T) {
	t.Helper()
	if !c.warmed {
		noLeftovers(t, c.h, c.l)
	}
}

// teardownGuard bounds the wait for what a closed worker leaves to go
// (the kernel's reaping and cgroup removal run after Close returns).
const teardownGuard = 10 * time.Second

// noLeftovers waits, within teardownGuard, for the launcher's teardown
// to leave nothing on the host.
func noLeftovers(t *testing.T, h Harness, l launch.Launcher) {
	t.Helper()
	deadline := time.Now().Add(teardownGuard)
	for {
		left := h.Leftovers(l)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left on the host: %v", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// request is a launch of job for this launcher: the attempt's work dir
// when its workers work in the attempt's.
func (c *check) request(t *testing.T, job string, lim protocol.Limits) launch.Request {
	req := launch.Request{Job: job + "-" + randomTag(), Attempt: 1, Limits: lim}
	if !c.caps.OwnWorkDirs {
		req.WorkDir = t.TempDir()
	}
	return req
}

// launch starts a worker that the test closes (and checks for leftovers)
// when it ends, if the test did not close it itself.
func (c *check) launch(t *testing.T, req launch.Request) *closer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	w, err := c.l.Launch(ctx, req)
	if err != nil {
		t.Fatalf("launch %s: %v", req.Job, err)
	}
	if w == nil {
		t.Fatalf("launch %s: no worker and no error", req.Job)
	}
	cl := &closer{Worker: w}
	t.Cleanup(func() {
		cl.close(t)
		c.noLeftovers(t)
	})
	return cl
}

// closer closes its worker once.
type closer struct {
	launch.Worker
	closed bool
	exit   launch.Exit
}

func (c *closer) close(t *testing.T) launch.Exit {
	t.Helper()
	if c.closed {
		return c.exit
	}
	c.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	exit, err := c.Close(ctx)
	if err != nil {
		t.Errorf("close the worker: %v", err)
	}
	c.exit = exit
	return exit
}

// start gives w the job and fails the test if the worker refuses it.
// The run's context is the run's: it ends when the test does.
func start(t *testing.T, w launch.Worker, job []byte) launch.Run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	run, err := w.Start(ctx, protocol.RunRequest{JobSpec: job, Attempt: 1, WorkDir: w.WorkDir()})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return run
}

// startSpin starts a job that never ends on its own, and checks the
// worker took it (a refused job's run ends with its refusal).
func startSpin(t *testing.T, w launch.Worker) launch.Run {
	t.Helper()
	run := start(t, w, Job(t, "spin", protocol.OpExecute, Spin, []uint64{60}, protocol.Limits{Reductions: 1 << 60}))
	select {
	case <-run.Done():
		_, err := run.Wait(context.Background())
		t.Fatalf("the endless job ended: %v", err)
	default:
	}
	return run
}

func wait(t *testing.T, run launch.Run) (protocol.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := run.Wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		t.Fatalf("the run did not end within %s", hangGuard)
	}
	return res, err
}

// A worker describes itself as one of this contract, with a valid
// descriptor, and what it describes is what the launcher declared.
func (c *check) describe(t *testing.T) {
	w := c.launch(t, c.request(t, "describe", protocol.Limits{}))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	caps, desc, err := w.Describe(ctx)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if err := desc.Validate(); err != nil {
		t.Errorf("descriptor: %v", err)
	}
	if !slices.Contains(caps.Contracts, protocol.ContractV1) || !slices.Equal(caps.Operations, c.caps.Worker.Operations) ||
		!slices.Equal(caps.ProofKinds, c.caps.Worker.ProofKinds) {
		t.Errorf("the worker describes %+v, the launcher declared %+v", caps, c.caps.Worker)
	}
}

// A tiny job runs to its result, and the closed worker leaves nothing.
func (c *check) runsAJob(t *testing.T) {
	w := c.launch(t, c.request(t, "add", protocol.Limits{}))
	res, err := wait(t, start(t, w, Job(t, "add", protocol.OpExecute, Add, []uint64{3, 5}, protocol.Limits{})))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Kind != protocol.KindExecution || !slices.Equal(res.Output, []uint64{8}) || res.Attempt != 1 {
		t.Errorf("result %+v, want output [8]", res)
	}
	if exit := w.close(t); exit.OOMKilled {
		t.Errorf("an honest run ended OOM-killed: %+v", exit)
	}
	c.noLeftovers(t)
}

// A launch whose context ended fails with an error and leaves nothing:
// the caller's deadline bounds the launch.
func (c *check) launchAfterDeadline(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now())
	defer cancel()
	w, err := c.l.Launch(ctx, c.request(t, "late", protocol.Limits{}))
	if err == nil {
		// A launcher may hand out a worker it had ready; it must still
		// be one that closes cleanly.
		cctx, ccancel := context.WithTimeout(context.Background(), hangGuard)
		defer ccancel()
		if _, err := w.Close(cctx); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	c.noLeftovers(t)
}

// Kill ends a run that would never end (the supervisor's deadline and a
// cancellation's last step): the run fails, Kill is idempotent, and the
// tree is gone.
func (c *check) killEndsTheRun(t *testing.T) {
	if !c.caps.Worker.Limits.WallTime {
		t.Skip("the launcher declares no wall-clock limit")
	}
	w := c.launch(t, c.request(t, "spin", protocol.Limits{}))
	run := startSpin(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := w.Kill(ctx); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if err := w.Kill(ctx); err != nil {
		t.Fatalf("second kill: %v", err)
	}
	if _, err := wait(t, run); err == nil {
		t.Fatal("a killed run reported a result")
	} else if pe := protocol.AsError(err); pe.Code != protocol.CodeIOError {
		t.Errorf("a killed run ended with %v, want the lost worker's %s", err, protocol.CodeIOError)
	}
	w.close(t)
	c.noLeftovers(t)
}

// A cancel request is acknowledged and ends the run as cancelled.
func (c *check) cancellation(t *testing.T) {
	if !c.caps.Worker.Limits.Cancellation {
		t.Skip("the launcher declares no cancellation")
	}
	w := c.launch(t, c.request(t, "cancel", protocol.Limits{}))
	run := startSpin(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	acked, err := run.Cancel(ctx, "cancelled: by the conformance suite")
	if err != nil || !acked {
		t.Fatalf("cancel: acknowledged %v, %v", acked, err)
	}
	_, err = wait(t, run)
	if pe := protocol.AsError(err); err == nil || pe.Code != protocol.CodeCancelled {
		t.Fatalf("a cancelled run ended with %v, want %s", err, protocol.CodeCancelled)
	}
	w.close(t)
	c.noLeftovers(t)
}

// A worker that needs more than its memory limit is killed by the host,
// and the launcher says so from the kernel's counter (Exit.OOMKilled),
// not from the worker's word: the job's certificate alone is larger than
// its memory, so no guard in the worker can see it coming.
func (c *check) memoryLimit(t *testing.T) {
	if !c.caps.Worker.Limits.Memory {
		t.Skip("the launcher declares no memory limit")
	}
	lim := protocol.Limits{MemoryBytes: 32 << 20}
	w := c.launch(t, c.request(t, "bulk", lim))
	bulk := make([]byte, 24<<20)
	rand.NewChaCha8([32]byte{1}).Read(bulk)
	job := JobWith(t, "bulk", protocol.OpVerify, Add, []uint64{3, 5}, lim, func(js *protocol.JobSpec) { js.Artifact = bulk })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The worker may be killed while it still receives the job.
	if run, err := w.Start(ctx, protocol.RunRequest{JobSpec: job, Attempt: 1, WorkDir: w.WorkDir()}); err == nil {
		if _, err := wait(t, run); err == nil {
			t.Fatal("a job larger than its memory limit reported a result")
		}
	}
	if exit := w.close(t); !exit.OOMKilled {
		t.Fatalf("exit %+v, want OOMKilled", exit)
	}
	c.noLeftovers(t)
}

// OwnWorkDirs: declared, a launch takes no work dir, refuses one, and
// the worker's own dir is open to the host and bounded, below the job's
// artifact limit (it is the worker's memory); not declared, a
// launch without the attempt's dir is refused and the worker has no dir
// of its own.
func (c *check) ownWorkDirs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	other := c.request(t, "workdir-refused", protocol.Limits{})
	if c.caps.OwnWorkDirs {
		other.WorkDir = t.TempDir()
	} else {
		other.WorkDir = ""
	}
	if w, err := c.l.Launch(ctx, other); !errors.Is(err, launch.ErrUnsupported) {
		if w != nil {
			w.Close(ctx)
		}
		t.Fatalf("a launch with work dir %q: %v, want ErrUnsupported", other.WorkDir, err)
	}
	c.noLeftovers(t)

	const artifactLimit = 64 << 20
	w := c.launch(t, c.request(t, "workdir", protocol.Limits{ArtifactBytes: artifactLimit}))
	files, err := w.Files()
	if err != nil {
		t.Fatalf("files: %v", err)
	}
	full, bound := w.WorkDirFull()
	if !c.caps.OwnWorkDirs {
		if files != nil || full || bound != 0 {
			t.Fatalf("a launcher without OwnWorkDirs: files %v, full %v, bound %d", files, full, bound)
		}
		return
	}
	if files == nil {
		t.Fatal("OwnWorkDirs declared, the worker has no work dir of its own")
	}
	defer files.Close()
	// The work dir is charged to the worker's memory: it must not grow
	// with the artifact limit, whose bytes go through the supervisor's
	// stream to disk (docs/design/jailed-artifacts-on-disk.md).
	if full || bound <= 0 || bound >= artifactLimit {
		t.Errorf("a fresh work dir: full %v, bound %d, want an empty one bounded below the artifact limit %d", full, bound, artifactLimit)
	}
	// The job runs in it.
	if _, err := wait(t, start(t, w, Job(t, "workdir", protocol.OpExecute, Add, []uint64{1, 2}, protocol.Limits{ArtifactBytes: artifactLimit}))); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// Warm: declared, Prewarm starts workers and a launch after it still
// applies the attempt's limits (a warm worker is bound to them); not
// declared, Prewarm is refused.
func (c *check) warm(t *testing.T) {
	err := c.l.Prewarm()
	if !c.caps.Warm {
		if !errors.Is(err, launch.ErrUnsupported) {
			t.Fatalf("prewarm without Warm declared: %v, want ErrUnsupported", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("prewarm: %v", err)
	}
	c.runsAJob(t)
	if c.caps.Worker.Limits.Memory {
		c.memoryLimit(t)
	}
}

// Host: a declared report says how workers are launched.
func (c *check) host(t *testing.T) {
	if c.caps.Host == nil {
		t.Skip("the launcher reports nothing about its host")
	}
	if c.caps.Host.Isolation == "" || c.caps.Host.Probe == nil {
		t.Errorf("host report %+v", c.caps.Host)
	}
}

// RemoveLeftovers on a launcher whose own workers are all closed removes
// nothing of theirs and fails on nothing.
func (c *check) removeLeftovers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if _, err := c.l.RemoveLeftovers(ctx); err != nil {
		t.Fatalf("remove leftovers: %v", err)
	}
	c.noLeftovers(t)
}
