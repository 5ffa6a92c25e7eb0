package integration

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The attacks of issue #26 on the supervisor's side of a worker's
// connection, through the real binaries: internal/hostileworker, built
// once and installed as "hostile-ATTACK" in this run's binary dir (where
// the leak check looks for what is left of a worker).

var hostileBuild struct {
	once sync.Once
	path string
	err  error
}

// hostileWorker returns the hostile worker installed for attack.
func hostileWorker(t testing.TB, attack string) string {
	t.Helper()
	hostileBuild.once.Do(func() {
		hostileBuild.path = filepath.Join(binDir, "hostileworker")
		hostileBuild.err = testbin.Build(repoRoot, "./internal/hostileworker", hostileBuild.path)
	})
	if hostileBuild.err != nil {
		t.Fatal(hostileBuild.err)
	}
	dst := filepath.Join(binDir, "hostile-"+attack)
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	in, err := os.Open(hostileBuild.path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// streamAttackGrowth bounds what a stream attack may add to the daemon's
// resident set, at its peak and once the job is accepted (issue #26).
const streamAttackGrowth = 32 << 20

// TestSupervisorSurvivesHostileStreams: a worker answers go-plugin's
// stdio and broker streams, which its client opens by itself, and as its
// job's Run begins sends through them one 1 GiB StdioData message, or
// 10^6 ConnInfo messages; then it does the job. Judged from the host:
// the job is accepted, and the daemon's peak resident set (VmHWM, reset
// before the job) and its resident set after it grow by at most 32 MiB.
// Before, go-plugin's client read both with a 2 GiB message limit: the
// huge message grew the daemon by 1.1 GB during the job (4 GB after a
// second one), the flood by 1.3 GB, a goroutine and a 5 s timer each; now
// the connection never opens either stream (pluginclient/bounds.go), and
// the worker reports that it never could attack.
func TestSupervisorSurvivesHostileStreams(t *testing.T) {
	requireIsolation(t)
	for _, attack := range []string{"stdio-huge", "broker-flood"} {
		t.Run(attack, func(t *testing.T) {
			home := newHome(t)
			d := startDaemonWorker(t, home, 1, hostileWorker(t, attack), "--log-level", "debug")
			defer d.stop(t)
			pid := d.cmd.Process.Pid
			before := procMemory(t, pid, "VmRSS")
			resetPeak(t, pid)
			spec := jobSpec(t, attack, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{})
			if _, err := d.client.Submit(context.Background(), spec, 0, nil); err != nil {
				t.Fatal(err)
			}
			st := waitDone(t, d, attack)
			peak, after := procMemory(t, pid, "VmHWM"), procMemory(t, pid, "VmRSS")
			if st.Job.State != "accepted" {
				t.Fatalf("%s: %s %+v, want accepted (the attack changes nothing the job needs)", attack, st.Job.State, st.Job.Error)
			}
			// Evidence that the attack was tried: the worker's report,
			// which reaches the log through its stderr pipe, on its own
			// time.
			step := map[string]string{"stdio-huge": "stdio", "broker-flood": "broker"}[attack]
			report := workerReport(d.log.String(), step)
			for deadline := time.Now().Add(10 * time.Second); report == "" && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				report = workerReport(d.log.String(), step)
			}
			if report == "" {
				t.Errorf("the worker reported no attack; daemon log:\n%s", d.log)
			}
			t.Logf("%s: worker: %q; daemon RSS %.1f MiB before, peak %.1f MiB (+%.1f), %.1f MiB after (+%.1f)",
				attack, report, mib(before), mib(peak), mib(peak-before), mib(after), mib(after-before))
			if peak-before > streamAttackGrowth || after-before > streamAttackGrowth {
				t.Errorf("%s: the daemon's resident set grew by %d bytes at its peak, %d after the job (at most %d)",
					attack, peak-before, after-before, streamAttackGrowth)
			}
		})
	}
}

// workerReport is the result a hostile worker reported for step
// ("hostile: STEP: RESULT" on its stderr, which the daemon logs at debug
// level), or "".
func workerReport(log, step string) string {
	prefix := "hostile: " + step + ": "
	for _, line := range strings.Split(log, "\n") {
		if i := strings.Index(line, prefix); i >= 0 {
			r := line[i+len(prefix):]
			if j := strings.IndexAny(r, `"\`); j >= 0 {
				r = r[:j]
			}
			return r
		}
	}
	return ""
}

// TestRunEndsASilentWorkerAtItsLimit: a worker binary that completes
// go-plugin's handshake and then never answers ("silent" reads nothing
// of its connection, "mute" speaks HTTP/2 but answers no call) is given
// to a one-shot run on a fresh home, whose first wait is the worker's
// description. The job's wall-clock limit bounds it: the run ends with
// deadline_exceeded within three times its 2 s limit. Before, the silent
// worker held `run --time 10s` for 41 s (two 20 s gRPC connection
// timeouts; io_error), and the mute one for ever.
func TestRunEndsASilentWorkerAtItsLimit(t *testing.T) {
	requireIsolation(t)
	const limit = 2 * time.Second
	for _, attack := range []string{"silent", "mute"} {
		t.Run(attack, func(t *testing.T) {
			home := newHome(t)
			prog := writeProgram(t, t.TempDir(), "add.nox", "[5 [[0 2] [0 6]]]")
			args := []string{"--home", home, "run", "--worker", hostileWorker(t, attack), "--isolation", "required", "--cgroup-name", cgroupName,
				prog, "--input-values", "3,5", "--time", limit.String(), "--format", "json"}
			start := time.Now()
			r := cli(t, args...)
			took := time.Since(start)
			var env protocol.Envelope
			if err := json.Unmarshal([]byte(r.stdout), &env); err != nil || env.Error == nil {
				t.Fatalf("run: exit %d, stdout %q (%v)\n%s", r.code, r.stdout, err, r.stderr)
			}
			if r.code != 1 || env.Error.Code != protocol.CodeDeadlineExceeded {
				t.Fatalf("run: exit %d, %+v after %v, want 1 and deadline_exceeded", r.code, env.Error, took)
			}
			if took > 3*limit {
				t.Errorf("run --time %v took %v", limit, took)
			}
			t.Logf("%s: run --time %v: %s: %s, after %v", attack, limit, env.Error.Code, env.Error.Message, took.Round(time.Millisecond))
		})
	}
}
