package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// TestClusterFaults is the Jepsen-style test of several hosts on one
// store: one etcd and three serve daemons (separate homes, one cluster,
// a 2 s lease) as real processes; jobs submitted round-robin through the
// three sockets while a nemesis, in turn, kill -9s a daemon and restarts
// it, SIGSTOPs one past its lease and SIGCONTs it, kill -9s etcd and
// restarts it on its data directory, and cuts one daemon off from etcd.
// Every client-visible operation is recorded with its time; then the
// history is checked (cluster_check_test.go): no job accepted twice,
// every job terminal or unknown, every accepted certificate verifies, no
// attempt prepared by two hosts, claims and acceptances linearizable
// (porcupine, a model of each job's claim register), and nothing left on
// any host.
//
// FAULT_SECONDS (default 20) is how long the nemesis runs and FAULT_JOBS
// (default 60) how many jobs are submitted: CI runs this short version,
// scripts/fault.sh the long one (60 s, 300 jobs, ten runs). FAULT_HISTORY
// names a directory to write the history to.
func TestClusterFaults(t *testing.T) {
	requireClusterHost(t)
	t.Parallel() // its lab, daemons and leak check are its own (netLab)
	seconds, jobs := envInt("FAULT_SECONDS", 20), envInt("FAULT_JOBS", 60)
	const ttl = 2 * time.Second
	etcdServer(t)
	lab := newNetLab(t, 3)
	etcd := startEtcd(t, lab, filepath.Join(t.TempDir(), "etcd"))
	ds := make([]*clusterDaemon, 3)
	for i := range ds {
		ds[i] = newClusterDaemon(t, lab, i+1, ttl)
		if err := ds[i].start(); err != nil {
			t.Fatalf("%v\n%s", err, ds[i].logs)
		}
	}
	h := &history{start: time.Now()}
	c := &faultRun{t: t, h: h, lab: lab, etcd: etcd, ds: ds, ttl: ttl, specs: map[string]faultJob{}}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.reads(ctx) }()
	submitted := make(chan struct{})
	go func() { defer close(submitted); c.submit(jobs, time.Duration(seconds)*time.Second) }()
	c.nemesis(time.Now().Add(time.Duration(seconds) * time.Second))
	<-submitted
	c.healAll()
	final := c.settle(jobs, 3*time.Minute)
	stop()
	wg.Wait()
	c.collectDaemonHistory()
	if dir := os.Getenv("FAULT_HISTORY"); dir != "" {
		if err := h.write(filepath.Join(dir, fmt.Sprintf("history-%d.jsonl", time.Now().UnixNano()))); err != nil {
			t.Errorf("write history: %v", err)
		}
	}
	c.check(final)
	// Nothing left on any host once the daemons have stopped.
	for _, d := range ds {
		if err := d.stop(); err != nil {
			t.Error(err)
		}
	}
	stopEtcdLeavingNothing(t, etcd, ds)
	fenced, recovered, unknown := 0, 0, 0
	for _, d := range ds {
		l := d.logs.String()
		fenced += strings.Count(l, "fenced: the cluster registration is lost")
		recovered += strings.Count(l, "recovered the attempt of a departed host")
		unknown += strings.Count(l, "etcd write of unknown outcome")
	}
	t.Logf("%d jobs, nemesis %d s: %s; boots fenced %d, attempts of departed hosts recovered %d, writes of unknown outcome resolved %d",
		jobs, seconds, h.summary(), fenced, recovered, unknown)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// faultRun is one run of the fault test.
type faultRun struct {
	t    *testing.T
	h    *history
	lab  *netLab
	etcd *etcdProc
	ds   []*clusterDaemon
	ttl  time.Duration

	mu    sync.Mutex
	specs map[string]faultJob // submitted (or tried)
	ids   []string
}

// faultJob is what a job was submitted with.
type faultJob struct {
	spec   []byte
	op     protocol.Operation
	inputs []uint64
	want   uint64 // the output
}

const faultProgram = "[5 [[0 2] [0 6]]]" // a + b

// submit sends n jobs round-robin through the daemons' sockets, spread
// over d; a submission refused (busy: that host is fenced or cannot reach
// etcd) or unanswered is sent again, to the next daemon, with the same
// payload (a resubmission of the same job is idempotent).
func (c *faultRun) submit(n int, d time.Duration) {
	gap := d / time.Duration(n)
	for i := range n {
		id := fmt.Sprintf("f%03d", i)
		var j faultJob
		switch {
		case i%4 == 1:
			// A second or so of work: a fault finds it running.
			inputs := []uint64{22}
			j = faultJob{spec: jobSpec(c.t, id, protocol.OpExecute, program(c.t, "spin.nox"), inputs, protocol.Limits{MemoryBytes: 12 << 30}),
				op: protocol.OpExecute, inputs: inputs, want: 0}
		default:
			op := protocol.OpExecute
			if i%2 == 0 {
				op = protocol.OpProve
			}
			inputs := []uint64{uint64(i), 7}
			j = faultJob{spec: jobSpec(c.t, id, op, faultProgram, inputs, protocol.Limits{}), op: op, inputs: inputs, want: uint64(i) + 7}
		}
		c.mu.Lock()
		c.specs[id] = j
		c.ids = append(c.ids, id)
		c.mu.Unlock()
		go c.submitOne(id, j, i%len(c.ds))
		time.Sleep(gap)
	}
}

func (c *faultRun) submitOne(id string, j faultJob, first int) {
	deadline := time.Now().Add(2 * time.Minute)
	for k := first; time.Now().Before(deadline); k++ {
		d := c.ds[k%len(c.ds)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		call := time.Now()
		_, err := d.client.Submit(ctx, j.spec, 0, &apitypes.RetryRequest{MaxAttempts: 3})
		ret := time.Now()
		cancel()
		c.h.add(op{Kind: "submit", Job: id, Host: d.host, Call: call.UnixNano(), Return: ret.UnixNano(), OK: err == nil, Err: errText(err)})
		if err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// reads polls the status of random submitted jobs through random
// daemons, recording what each read saw.
func (c *faultRun) reads(ctx context.Context) {
	r := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		c.mu.Lock()
		if len(c.ids) == 0 {
			c.mu.Unlock()
			continue
		}
		id := c.ids[r.IntN(len(c.ids))]
		c.mu.Unlock()
		d := c.ds[r.IntN(len(c.ds))]
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		call := time.Now()
		st, err := d.client.Status(rctx, id)
		ret := time.Now()
		cancel()
		if err != nil {
			continue // not known yet, or the host cannot answer: no information
		}
		c.h.add(op{Kind: "read", Job: id, Host: d.host, Call: call.UnixNano(), Return: ret.UnixNano(), OK: true,
			Attempts: st.Job.Attempts, Accepted: st.Job.AcceptedAttempt, State: string(st.Job.State)})
	}
}

// nemesis runs the faults in turn until the deadline.
func (c *faultRun) nemesis(until time.Time) {
	faults := []func(d *clusterDaemon){c.killRestart, c.pause, func(*clusterDaemon) { c.crashEtcd() }, c.partition}
	for k := 0; time.Now().Before(until); k++ {
		d := c.ds[k%len(c.ds)]
		faults[k%len(faults)](d)
		time.Sleep(time.Second)
	}
}

func (c *faultRun) fault(name, target string, fn func()) {
	call := time.Now()
	fn()
	c.h.add(op{Kind: "nemesis", Job: name, Host: target, Call: call.UnixNano(), Return: time.Now().UnixNano(), OK: true})
}

func (c *faultRun) killRestart(d *clusterDaemon) {
	c.fault("kill-9 and restart", d.host, func() {
		d.kill9()
		time.Sleep(time.Second)
		c.startDaemon(d)
	})
}

// startDaemon starts a daemon again, waiting for etcd if it is down.
func (c *faultRun) startDaemon(d *clusterDaemon) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := d.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Errorf("restart %s: %v\n%s", d.host, err, tail(d.logs.String(), 4000))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *faultRun) pause(d *clusterDaemon) {
	c.fault("SIGSTOP past the lease, SIGCONT", d.host, func() {
		d.signal(syscall.SIGSTOP)
		time.Sleep(c.ttl + 2*time.Second)
		d.signal(syscall.SIGCONT)
	})
}

func (c *faultRun) crashEtcd() {
	c.fault("kill-9 etcd and restart it on its data dir", "etcd", func() {
		c.etcd.kill9()
		time.Sleep(time.Second)
		if err := c.etcd.restart(); err != nil {
			c.t.Errorf("restart etcd: %v", err)
		}
	})
}

func (c *faultRun) partition(d *clusterDaemon) {
	c.fault("cut off from etcd past the lease", d.host, func() {
		if err := c.lab.cut(d.i); err != nil {
			c.t.Errorf("cut %s: %v", d.host, err)
			return
		}
		time.Sleep(c.ttl + 2*time.Second)
		if err := c.lab.heal(d.i); err != nil {
			c.t.Errorf("heal %s: %v", d.host, err)
		}
	})
}

// healAll ends every fault: etcd and every daemon running, connected.
func (c *faultRun) healAll() {
	if !c.etcd.alive() {
		if err := c.etcd.restart(); err != nil {
			c.t.Fatalf("restart etcd: %v", err)
		}
	}
	for _, d := range c.ds {
		c.lab.heal(d.i)
		if d.alive() {
			d.signal(syscall.SIGCONT)
		} else {
			c.startDaemon(d)
		}
	}
}

// settle waits until every job that exists has ended (unknown included)
// and returns their statuses, read through any daemon that answers.
func (c *faultRun) settle(n int, bound time.Duration) map[string]*apitypes.JobStatus {
	deadline := time.Now().Add(bound)
	final := map[string]*apitypes.JobStatus{}
	for {
		open := 0
		for i := range n {
			id := fmt.Sprintf("f%03d", i)
			if st := final[id]; st != nil && st.Job.State.Terminal() {
				continue
			}
			st, err := c.status(id)
			switch {
			case err == nil:
				final[id] = st
				if !st.Job.State.Terminal() {
					open++
				}
			case isUnknownJob(err) && c.submittedNever(id):
				// Never admitted: every submission of it failed.
			default:
				open++
			}
		}
		if open == 0 {
			return final
		}
		if time.Now().After(deadline) {
			c.t.Errorf("%d jobs have not ended %s after the faults", open, bound)
			return final
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (c *faultRun) status(id string) (*apitypes.JobStatus, error) {
	var last error
	for _, d := range c.ds {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := d.client.Status(ctx, id)
		cancel()
		if err == nil {
			return st, nil
		}
		last = err
	}
	return nil, last
}

func isUnknownJob(err error) bool {
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == protocol.CodeUnknownJob
}

// submittedNever: no submission of the job was answered ok.
func (c *faultRun) submittedNever(id string) bool {
	for _, o := range c.h.ops() {
		if o.Kind == "submit" && o.Job == id && o.OK {
			return false
		}
	}
	return true
}

// collectDaemonHistory adds the daemons' claims and acceptances (their
// "history" log records) to the history.
func (c *faultRun) collectDaemonHistory() {
	for _, d := range c.ds {
		for _, line := range d.historyLines() {
			var r struct {
				Op       string `json:"op"`
				Job      string `json:"job"`
				Attempt  uint32 `json:"attempt"`
				Host     string `json:"host"`
				Boot     string `json:"boot"`
				Gen      uint64 `json:"generation"`
				Invoked  int64  `json:"invoked_ns"`
				Returned int64  `json:"returned_ns"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				c.t.Errorf("%s: history record %q: %v", d.host, line, err)
				continue
			}
			c.h.add(op{Kind: r.Op, Job: r.Job, N: r.Attempt, Host: r.Host, Boot: r.Boot, Generation: r.Gen,
				Call: r.Invoked, Return: r.Returned, OK: true, Logged: true})
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
