package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/internal/testbin"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// crashpointBin is cyber-supervisor built with -tags crashpoints: the
// real supervisor, which stops itself (SIGSTOP) at the step of an act's
// path that CYBER_SUPERVISOR_CRASHPOINT names (supervisor/fencing,
// crashpoint_on.go). Built once, when a test first needs it.
var crashpointBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "cyber-supervisor-crashpoints")
	return bin, testbin.BuildTags(repoRoot, "./cmd/cyber-supervisor", bin, "crashpoints")
})

// The steps of an act's path, in order, with what a SIGKILL there
// leaves: the lines emit.jsonl holds, and whether the attempt is
// unknown after the restart (and then whether it has its claim).
var actSteps = []struct {
	name    string
	lines   int
	unknown bool
	claimed bool
}{
	{"before-attempt", 0, false, false}, // nothing of the attempt is durable
	{"before-claim", 0, true, false},    // the attempt is, its claim is not
	{"before-act", 0, true, true},       // the claim is, the act did not run
	{"before-outcome", 1, true, true},   // the act ran, its outcome is lost
	{"before-consume", 1, false, true},  // the outcome is durable
}

// TestFencingCrashSteps stops a real `serve` at each step of a host
// act's path (the real supervisor built with its crash points, the
// built-in emit act, whose effect is a line of emit.jsonl), then kills
// it with SIGKILL, or lets it go on with SIGTERM pending, and restarts
// the plain build. The prog emits twice. After a SIGKILL: the act ran
// at most once; what the seed leaves unknown (an attempt recorded,
// claimed or not, whose outcome was not) is neither run again nor
// dropped, the operator sees it in operation list and invocation show,
// cancel refuses it naming `operation reconcile` (stale_state), and one
// reconcile resolves it (the same again changes nothing, another is
// refused); what was not yet attempted, or whose outcome is durable,
// goes on by itself to its end (the step charge of the crashed slice
// does not end it). After a SIGTERM nothing is left to reconcile and
// the invocation completes. No operation is emitted twice, every line
// has its claim at its attempt's generation, and nothing is left.
func TestFencingCrashSteps(t *testing.T) {
	requireIsolation(t)
	bin, err := crashpointBin()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		for _, step := range actSteps {
			name := "kill/" + step.name
			if sig == syscall.SIGTERM {
				name = "term/" + step.name
			}
			t.Run(name, func(t *testing.T) {
				home := parallelHome(t) // the ten steps run side by side
				inv := emitTwiceInvocation(t, home)
				d := startStepDaemon(t, bin, home, fencing.CrashpointEnv+"="+step.name)
				d.waitStopped(t, step.name)
				if sig == syscall.SIGKILL {
					d.cmd.Process.Signal(syscall.SIGKILL)
					<-d.done
				} else {
					d.cmd.Process.Signal(syscall.SIGTERM)
					d.cmd.Process.Signal(syscall.SIGCONT)
					if err := d.wait(60 * time.Second); err != nil {
						t.Fatalf("serve after SIGTERM at %s: %v\n%s", step.name, err, d.log)
					}
				}
				lines := emitLog(t, home)
				if sig == syscall.SIGKILL && len(lines) != step.lines {
					t.Fatalf("SIGKILL at %s: emit.jsonl holds %d lines, want %d", step.name, len(lines), step.lines)
				}

				d2 := startStepDaemon(t, supervisorBin, home)
				d2.waitUp(t)
				if sig == syscall.SIGKILL && step.unknown {
					reconcileAfterCrash(t, home, d2, inv, step.claimed, len(lines))
				} else {
					v := waitInvocationEnd(t, d2, inv)
					if v.Status != string(store.InvocationCompleted) || len(v.Output) != 2 || v.Output[0] != 1 || v.Output[1] != 2 {
						t.Fatalf("after %s at %s and a restart: %s %v output %v", name, step.name, v.Status, v.Error, v.Output)
					}
				}
				checkEmitClaims(t, home, d2)
				d2.cmd.Process.Signal(syscall.SIGTERM)
				if err := d2.wait(60 * time.Second); err != nil {
					t.Fatalf("serve after the restart, SIGTERM: %v\n%s", err, d2.log)
				}
				if _, err := os.Stat(supervisor.SocketPath(home)); !os.IsNotExist(err) {
					t.Errorf("the socket is left after a clean stop: %v", err)
				}
			})
		}
	}
}

// emitTwiceInvocation makes a home with a neuron, a grant of emit and an
// invocation of a prog that emits twice (its output: the two lines'
// numbers), left for the next daemon to drive.
func emitTwiceInvocation(t *testing.T, home string) string {
	t.Helper()
	ctx := context.Background()
	e, closeStore := direct(t, home)
	defer closeStore()
	p := installEmitTwice(t, e, "stepnet", 0)
	inv, err := e.Invoke(ctx, p.ID, []uint64{5})
	if err != nil {
		t.Fatal(err)
	}
	return inv.ID
}

// reconcileAfterCrash is the owner after a SIGKILL left the invocation's
// first attempt unknown: the restarted daemon does not dispatch it
// again, the operator's views say what is known, cancel is refused
// naming the reconcile, and the reconcile (a value when the act wrote
// its line, a failure when it did not) lets the invocation end.
func reconcileAfterCrash(t *testing.T, home string, d *stepDaemon, inv string, claimed bool, lines int) {
	t.Helper()
	d.waitLog(t, `invocation waits for reconciliation.* invocation=`+inv)
	ops := operationList(t, home)
	if len(ops) != 1 || len(ops[0].Attempts) != 1 {
		t.Fatalf("after the crash: %d operations, want one with one attempt: %+v", len(ops), ops)
	}
	op, a := ops[0], ops[0].Attempts[0]
	hasClaim := string(a.Claim) != "null"
	if !a.Unknown || string(a.Outcome) != "null" || hasClaim != claimed || op.StageName != "attempted" {
		t.Fatalf("after the crash: stage %s, attempt unknown %v, claim %s (want %v)", op.StageName, a.Unknown, a.Claim, claimed)
	}
	// The restarted daemon runs a generation of its own: the old
	// boot's attempt is fenced, never claimed again.
	var root struct {
		Generation string `json:"generation"`
	}
	if err := json.Unmarshal(cliJSON(t, 0, "--home", home, "placement", "show").Result, &root); err != nil {
		t.Fatal(err)
	}
	gen, agen := atoi(t, root.Generation), atoi(t, a.Generation)
	if gen <= agen {
		t.Fatalf("the restarted daemon is at generation %d, the attempt at %d", gen, agen)
	}
	show := cli(t, "--home", home, "invocation", "show", inv)
	wantClaim := "no claim"
	if claimed {
		wantClaim = fmt.Sprintf("claimed at generation %d", agen)
	}
	if show.code != 0 || !strings.Contains(show.stdout, wantClaim+", unknown: needs reconciliation") {
		t.Fatalf("invocation show does not say %q: %+v", wantClaim+", unknown: needs reconciliation", show)
	}
	env := cliJSON(t, 5, "--home", home, "invocation", "cancel", inv)
	hint := fmt.Sprintf("operation reconcile %s --attempt %s", op.ID, a.N)
	if env.Error == nil || env.Error.Code != protocol.CodeStaleState || !strings.Contains(env.Error.Message, hint) {
		t.Fatalf("cancel of an unknown attempt: %+v, want stale_state naming %q", env.Error, hint)
	}

	args := []string{"--home", home, "operation", "reconcile", op.ID, "--attempt", a.N}
	outcome, other := []string{"--failed", "the act did not run"}, []string{"--value", "1"}
	if lines == 1 {
		outcome, other = []string{"--value", "1"}, []string{"--failed", "no line"}
	}
	var rep struct {
		Recorded bool `json:"recorded"`
	}
	if err := json.Unmarshal(cliJSON(t, 0, append(args, outcome...)...).Result, &rep); err != nil || !rep.Recorded {
		t.Fatalf("reconcile: %+v (%v)", rep, err)
	}
	if err := json.Unmarshal(cliJSON(t, 0, append(args, outcome...)...).Result, &rep); err != nil || rep.Recorded {
		t.Fatalf("the same reconcile again: %+v (%v), want recorded false", rep, err)
	}
	if env := cliJSON(t, 5, append(args, other...)...); env.Error == nil || env.Error.Code != protocol.CodeStaleState {
		t.Fatalf("another outcome: %+v, want stale_state", env.Error)
	}
	v := waitInvocationEnd(t, d, inv)
	if lines == 1 {
		if v.Status != string(store.InvocationCompleted) || len(v.Output) != 2 || v.Output[0] != 1 || v.Output[1] != 2 {
			t.Fatalf("after reconciling the line: %s %v output %v", v.Status, v.Error, v.Output)
		}
		return
	}
	if v.Status != string(store.InvocationFailed) || v.Error == nil || v.Error.Code != protocol.CodeExecutionFailed ||
		!strings.Contains(v.Error.Message, "the act did not run") {
		t.Fatalf("after reconciling a failure: %s %v", v.Status, v.Error)
	}
}

// cliOperation is an operation as `operation list --format json` prints
// it (every number a decimal string), with what this test reads.
type cliOperation struct {
	ID        string `json:"id"`
	StageName string `json:"stage_name"`
	Attempts  []struct {
		N          string          `json:"n"`
		Generation string          `json:"generation"`
		Unknown    bool            `json:"unknown"`
		Claim      json.RawMessage `json:"claim"`
		Outcome    json.RawMessage `json:"outcome"`
	} `json:"attempts"`
}

// operationList is `operation list --format json` on home.
func operationList(t *testing.T, home string) []cliOperation {
	t.Helper()
	var ops []cliOperation
	if err := json.Unmarshal(cliJSON(t, 0, "--home", home, "operation", "list").Result, &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

// emitLog reads home's emit.jsonl and fails the test if it holds an
// operation twice.
func emitLog(t *testing.T, home string) []hostact.EmitLine {
	t.Helper()
	lines, err := hostact.ReadEmitLog(filepath.Join(hostact.EffectsDir(home), hostact.EmitFile))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, l := range lines {
		if n, dup := seen[l.Operation]; dup {
			t.Fatalf("operation %s emitted twice (lines %d and %d)", l.Operation, n, i+1)
		}
		seen[l.Operation] = i + 1
	}
	return lines
}

// checkEmitClaims: every line of emit.jsonl belongs to an attempt with
// its claim, made at the attempt's own generation, and every claim is at
// its attempt's generation.
func checkEmitClaims(t *testing.T, home string, d *stepDaemon) {
	t.Helper()
	ops, err := d.client.Operations(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	claimed := map[string]bool{}
	for _, op := range ops {
		for _, a := range op.Attempts {
			if a.Claim == nil {
				continue
			}
			if a.Claim.Generation != a.Generation {
				t.Fatalf("operation %s: claim at generation %d, attempt at %d", op.ID, a.Claim.Generation, a.Generation)
			}
			claimed[op.ID] = true
		}
	}
	for i, l := range emitLog(t, home) {
		if !claimed[l.Operation] {
			t.Fatalf("line %d (operation %s) has no claim", i+1, l.Operation)
		}
	}
}

// waitInvocationEnd follows an invocation through the daemon until it
// has ended.
func waitInvocationEnd(t *testing.T, d *stepDaemon, id string) *api.InvocationReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		v, err := d.client.WaitInvocation(ctx, id)
		if err != nil {
			t.Fatalf("wait for invocation %s: %v\n%s", id, err, d.log)
		}
		if store.InvocationStatus(v.Status).Terminal() {
			return v
		}
	}
}

// stepDaemon is a `serve` of a given binary, its output kept where the
// test may read it while it runs.
type stepDaemon struct{ *daemon }

// startStepDaemon starts serve of bin on home (info logs, one slot), with
// env added to its environment.
func startStepDaemon(t *testing.T, bin, home string, env ...string) *stepDaemon {
	t.Helper()
	return &stepDaemon{spawnDaemon(t, bin, home, env, "--worker", binFor(home, workerBin), "--slots", "1", "--log-level", "info")}
}

// wait waits for the daemon to exit, at most timeout.
func (d *stepDaemon) wait(timeout time.Duration) error {
	select {
	case err := <-d.done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("still running after %s", timeout)
	}
}

// waitUp waits until the daemon answers on its socket.
func (d *stepDaemon) waitUp(t *testing.T) {
	t.Helper()
	d.poll(t, "to answer", func() bool {
		c, err := net.Dial("unix", supervisor.SocketPath(d.home))
		if err != nil {
			return false
		}
		c.Close()
		_, err = d.client.List(context.Background(), "")
		return err == nil
	})
}

// waitStopped waits until the daemon stopped itself at its crash point.
func (d *stepDaemon) waitStopped(t *testing.T, step string) {
	t.Helper()
	// The daemon logs the step and then stops itself; the log reaches
	// d.log through a pipe and a copying goroutine, which may not have
	// copied the line yet when the process is seen stopped.
	stopped := regexp.MustCompile(`crashpoint \S+: stopped`)
	d.poll(t, "to stop at "+step, func() bool {
		return processState(d.cmd.Process.Pid) == 'T' && stopped.MatchString(d.log.String())
	})
	if !strings.Contains(d.log.String(), "crashpoint "+step+": stopped") {
		t.Fatalf("the daemon stopped, but not at %s\n%s", step, d.log)
	}
}

// waitLog waits until the daemon's log has a line matching pattern.
func (d *stepDaemon) waitLog(t *testing.T, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	d.poll(t, "to log "+pattern, func() bool { return re.MatchString(d.log.String()) })
}

func (d *stepDaemon) poll(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		select {
		case err := <-d.done:
			t.Fatalf("the daemon exited (%v) before it came %s\n%s", err, what, d.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not come %s in 60 s\n%s", what, d.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func atoi(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// processState is the state letter of /proc/PID/stat (0 if unreadable).
func processState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// TestDamagedFencingRecordIsRefused alters the claims of a real home's
// completed invocation in its store file (sealed again, as anyone with
// the file can): one that no longer decodes, one whose signed fields
// changed. Neither has a valid authentication tag any more (schema 7):
// the operator's commands refuse it with internal_error naming the
// record, never a panic, and serve still starts and stops cleanly.
func TestDamagedFencingRecordIsRefused(t *testing.T) {
	requireIsolation(t)
	want := store.ErrUnauthenticated.Error() + ": its tag does not verify"
	for _, c := range []struct{ name, from, to, want string }{
		{"undecodable", `"generation":"`, `"generation":"x`, want},
		{"tampered", `"generation":"1"`, `"generation":"7"`, want},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := newHome(t)
			inv := emitTwiceInvocation(t, home)
			d := startStepDaemon(t, supervisorBin, home)
			d.waitUp(t)
			if v := waitInvocationEnd(t, d, inv); v.Status != string(store.InvocationCompleted) {
				t.Fatalf("before the damage: %s %v", v.Status, v.Error)
			}
			d.cmd.Process.Signal(syscall.SIGTERM)
			if err := d.wait(60 * time.Second); err != nil {
				t.Fatal(err)
			}
			resealRecords(t, filepath.Join(home, "store", bolt.FileName), "claims", c.from, c.to)
			for _, args := range [][]string{{"operation", "list"}, {"invocation", "show", inv}} {
				r := cli(t, append([]string{"--home", home}, args...)...)
				if r.code != 1 || !strings.Contains(r.stderr, "internal_error") || !strings.Contains(r.stderr, c.want) ||
					!strings.Contains(r.stderr, "claims/") || strings.Contains(r.stderr, "panic") {
					t.Fatalf("%v on a %s claim: exit %d, %q", args, c.name, r.code, r.stderr)
				}
			}
			d = startStepDaemon(t, supervisorBin, home)
			d.waitUp(t)
			d.cmd.Process.Signal(syscall.SIGTERM)
			if err := d.wait(60 * time.Second); err != nil || strings.Contains(d.log.String(), "panic") {
				t.Fatalf("serve on a %s claim: %v\n%s", c.name, err, d.log)
			}
		})
	}
}

// resealRecords replaces from by to in the payload of every record of
// bucket in the store file at path, and seals each again (docs/store.md:
// the payload, then the CRC-32C of bucket, 0, key and payload).
func resealRecords(t *testing.T, path, bucket, from, to string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	n := 0
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %s", bucket)
		}
		type record struct{ k, payload []byte }
		var all []record
		err := b.ForEach(func(k, v []byte) error {
			all = append(all, record{bytes.Clone(k), bytes.Clone(v[:len(v)-4])})
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range all {
			p := bytes.Replace(r.payload, []byte(from), []byte(to), 1)
			if bytes.Equal(p, r.payload) {
				continue
			}
			n++
			sum := crc32.Update(0, castagnoli, []byte(bucket))
			sum = crc32.Update(sum, castagnoli, []byte{0})
			sum = crc32.Update(sum, castagnoli, r.k)
			sum = crc32.Update(sum, castagnoli, p)
			if err := b.Put(r.k, binary.BigEndian.AppendUint32(p, sum)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("reseal %s (%d changed): %v", bucket, n, err)
	}
}
