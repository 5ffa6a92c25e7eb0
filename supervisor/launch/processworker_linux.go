package launch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginclient"
	"github.com/cyberia-to/cyber-supervisor/sandbox"
)

// A launched worker process: its client, usage, kill and close, the
// labelled log of its stderr, and the environment every worker gets.

type processWorker struct {
	log     *slog.Logger
	work    workDir
	stderr  *stderrLog
	group   *limits.Group
	sb      *sandbox.Sandbox
	client  *plugin.Client
	wc      *pluginclient.Client
	workDir string

	closeOnce sync.Once
	exit      Exit
	closeErr  error
}

func (w *processWorker) Describe(ctx context.Context) (protocol.Capabilities, protocol.WorkerDescriptor, error) {
	return w.wc.Describe(ctx)
}

func (w *processWorker) Start(ctx context.Context, req protocol.RunRequest) (Run, error) {
	run, err := w.wc.Start(ctx, req)
	if err != nil {
		// A nil *pluginclient.Run in a Run would not be a nil Run.
		return nil, err
	}
	return run, nil
}

func (w *processWorker) WorkDir() string { return w.workDir }

// Kill ends the whole tree: the sandbox's Kill calls the cgroup kill (its
// KillHook) first, then signals and reaps the worker itself.
func (w *processWorker) Kill(ctx context.Context) error {
	switch {
	case w.sb != nil:
		return w.sb.Kill(ctx)
	case w.group != nil:
		return w.group.Kill(ctx)
	}
	return nil
}

func (w *processWorker) Usage() Usage {
	var u Usage
	if w.group == nil {
		if w.sb != nil {
			u.CPUTime = processCPU(w.sb.Pid())
		}
		return u
	}
	if v, err := w.group.PeakMemory(); err == nil {
		u.PeakMemory = v
	}
	if v, err := w.group.CPUUsage(); err == nil {
		u.CPUTime = v
	}
	return u
}

func (w *processWorker) Close(ctx context.Context) (Exit, error) {
	w.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		errs := []error{w.Kill(ctx)}
		if w.client != nil {
			// The tree is gone: go-plugin's Kill returns at once.
			w.client.Kill()
		}
		if w.sb != nil {
			// The exit status means nothing here: a killed worker is the
			// normal end, and OOM is read from the cgroup below. Without
			// a cgroup, the reaped process has the CPU time.
			if ps, _ := w.sb.Wait(ctx); ps != nil && w.group == nil {
				w.exit.CPUTime = ps.UserTime() + ps.SystemTime()
			}
		}
		if w.group != nil {
			// Delete takes the final statistics; Result then returns
			// them instead of reading every counter a second time.
			derr := w.group.Delete()
			out, err := w.group.Result()
			if err == nil {
				w.exit = Exit{OOMKilled: out.OOMKilled, Usage: Usage{PeakMemory: out.PeakMemoryBytes, CPUTime: time.Duration(out.CPUUsageNanos)}}
			}
			errs = append(errs, derr, err)
		}
		// Nothing of the worker runs any more: its tmpfs and its uid go.
		w.releaseWorkDir()
		w.closeErr = errors.Join(errs...)
	})
	return w.exit, w.closeErr
}

// abandon releases what a launch took before it had a sandbox.
func (w *processWorker) abandon() {
	if w.group != nil {
		w.group.Kill(context.Background())
		w.group.Delete()
	}
	w.releaseWorkDir()
}

// stderrLog forwards worker stderr to the log at debug level: it is
// untrusted text, never shown at info. It forwards the first
// stderrLogBytes of each worker, then says once that the rest is
// dropped (the sandbox keeps the last 4 KiB for the diagnosis of a
// worker that dies at its start).
type stderrLog struct {
	log     *slog.Logger
	mu      sync.Mutex // a warm worker is relabelled when bound
	job     string
	attempt uint32
	logged  int  // bytes forwarded
	dropped bool // some were not
}

// stderrLogBytes bounds what one worker's stderr adds to the log: an
// honest worker writes a line or a crash's trace, a few KiB.
const stderrLogBytes = 64 << 10

func (s *stderrLog) Write(b []byte) (int, error) {
	s.mu.Lock()
	job, attempt := s.job, s.attempt
	keep := min(len(b), max(stderrLogBytes-s.logged, 0))
	s.logged += keep
	note := keep < len(b) && !s.dropped
	s.dropped = s.dropped || keep < len(b)
	s.mu.Unlock()
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return len(b), nil
	}
	if keep > 0 {
		s.log.Debug("worker stderr", "job", job, "attempt", attempt, "text", string(b[:keep]))
	}
	if note {
		s.log.Debug("worker stderr: the rest is dropped", "job", job, "attempt", attempt, "logged_bytes", stderrLogBytes)
	}
	return len(b), nil
}

func (s *stderrLog) label(job string, attempt uint32) {
	s.mu.Lock()
	s.job, s.attempt = job, attempt
	s.mu.Unlock()
}

var _ io.Writer = (*stderrLog)(nil)

// workerEnv is the environment common to every worker, computed once:
//   - GOMAXPROCS=procs (1 when unset; see LauncherConfig.WorkerProcs);
//   - CYBER_WORKER_PROVE_PIPELINE=on or off (Config.ProvePipeline);
//   - on amd64, GODEBUG=cpu.sse42=off: the worker's one user of SSE4.2 is
//     hash/crc32's init of its Castagnoli tables, which zstd's snappy
//     converter asks for at package init and the worker never uses; with
//     the feature hidden, crc32 builds the plain tables instead, 0.045 ms
//     instead of 0.23 ms of every worker's start;
//   - the host's machine id and kernel boot id, for the workers'
//     descriptors: a jailed worker cannot read them and would make up
//     random ones (each costing it a crypto/rand start-up). An id that
//     cannot be read, or is not one short printable word, is left to the
//     worker.
func workerEnv(procs int, provePipeline bool) []string {
	if procs <= 0 {
		procs = 1
	}
	pipeline := "off"
	if provePipeline {
		pipeline = "on"
	}
	env := []string{"GOMAXPROCS=" + strconv.Itoa(procs), protocol.EnvWorkerProvePipeline + "=" + pipeline}
	if runtime.GOARCH == "amd64" {
		env = append(env, "GODEBUG=cpu.sse42=off")
	}
	for _, id := range []struct{ key, path string }{
		{protocol.EnvWorkerDeviceID, "/etc/machine-id"},
		{protocol.EnvWorkerBootID, "/proc/sys/kernel/random/boot_id"},
	} {
		b, err := os.ReadFile(id.path)
		// The descriptor's text rule, and one word.
		if v := strings.TrimSpace(string(b)); err == nil && protocol.ValidText(v) && !strings.Contains(v, " ") {
			env = append(env, id.key+"="+v)
		}
	}
	return env
}
