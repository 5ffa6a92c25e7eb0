package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// TestClusterServeFaults is TestServeFaults for several hosts on one
// etcd: three serve daemons (2 s lease) and one etcd, all real
// processes, and in each round one operator's bad day while clients
// submit (also the same job to two hosts at once), cancel and collect
// through random hosts: a daemon killed (SIGKILL) or stopped (SIGTERM)
// at a random moment, also during its start or while the others recover
// it; two daemons killed one after the other; a daemon paused (SIGSTOP)
// past its lease and woken; etcd paused, or killed and restarted on its
// data directory. After each round, with everything running again, it
// checks what docs/cluster.md and the seed promise: every job answered
// is there once (or was removed by gc, and its id is then refused); no
// job has more than one accepted attempt or more attempts than its
// policy allows, nor a live attempt beside its end; a retryable failure
// or an interruption with attempts left was retried; a job that ended
// stays as it ended; a paused host, once woken, recorded nothing for the
// attempts of the boot whose lease had expired; and after every clean
// stop nothing of that host's workers is left. At the end every job has
// ended and nothing is left on any host.
//
// FAULT_ROUNDS rounds (default 4, a smoke run for CI; scripts/
// fault-cluster.sh runs many), FAULT_SEED to replay one's choices.
func TestClusterServeFaults(t *testing.T) {
	requireClusterHost(t)
	t.Parallel() // its lab, daemons and leak check are its own (netLab)
	rounds, seed := faultRounds(t, 4)
	const ttl = 2 * time.Second
	etcdServer(t)
	lab := newNetLab(t, 3)
	f := &clusterFaults{faultBook: newFaultBook(t, seed, 0xc105), ttl: ttl,
		etcd: startEtcd(t, lab, filepath.Join(t.TempDir(), "etcd"))}
	for i := range 3 {
		d := newClusterDaemon(t, lab, i+1, ttl)
		if err := d.start(); err != nil {
			t.Fatalf("%v\n%s", err, d.logs)
		}
		f.ds = append(f.ds, d)
	}
	for round := 1; round <= rounds && !t.Failed(); round++ {
		f.round(round)
	}
	if t.Failed() {
		f.dumpLogs()
		return
	}
	f.settle(3 * time.Minute)
	f.check("final")
	for _, d := range f.ds {
		f.stopClean(d)
	}
	stopEtcdLeavingNothing(t, f.etcd, f.ds)
	if t.Failed() {
		f.dumpLogs()
	}
}

type clusterFaults struct {
	*faultBook
	ttl  time.Duration
	etcd *etcdProc
	ds   []*clusterDaemon
	// pauses: the boots that were paused past their lease (under mu).
	pauses []pausedBoot
}

// pausedBoot is a boot that was SIGSTOPped past its lease: from woken
// on, it may record nothing for its attempts.
type pausedBoot struct {
	host, boot string
	woken      time.Time
}

func (f *clusterFaults) pick() *clusterDaemon { return f.ds[f.intN(len(f.ds))] }

// round runs the clients against the cluster while one fault happens,
// then brings everything back and checks.
func (f *clusterFaults) round(n int) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f.act(n, w)
				time.Sleep(time.Duration(f.intN(250)) * time.Millisecond)
			}
		}()
	}
	time.Sleep(time.Duration(200+f.intN(1500)) * time.Millisecond)
	name := f.fault()
	time.Sleep(time.Duration(f.intN(1000)) * time.Millisecond)
	close(stop)
	wg.Wait()
	f.heal()
	f.check(fmt.Sprintf("round %d (%s)", n, name))
}

// fault does one of the bad day's things and says which.
func (f *clusterFaults) fault() string {
	d := f.pick()
	switch f.intN(8) {
	case 0:
		d.kill9()
		f.restart(d, syscall.SIGKILL)
		return "SIGKILL " + d.host
	case 1:
		f.stopClean(d)
		f.restart(d, syscall.SIGTERM)
		return "SIGTERM " + d.host
	case 2:
		// The survivors recover the first while the second goes too.
		d.kill9()
		time.Sleep(time.Duration(f.intN(int(f.ttl/time.Millisecond)+1000)) * time.Millisecond)
		e := f.ds[(d.i)%len(f.ds)]
		e.kill9()
		f.restart(d, syscall.SIGKILL)
		f.restart(e, syscall.SIGKILL)
		return "SIGKILL " + d.host + ", then " + e.host + " while it is recovered"
	case 3:
		boot := f.bootOf(d)
		d.signal(syscall.SIGSTOP)
		time.Sleep(f.ttl + 2*time.Second)
		woken := time.Now()
		d.signal(syscall.SIGCONT)
		if boot != "" {
			f.mu.Lock()
			f.pauses = append(f.pauses, pausedBoot{host: d.host, boot: boot, woken: woken})
			f.mu.Unlock()
		}
		return "SIGSTOP " + d.host + " past its lease, SIGCONT"
	case 4:
		pause := time.Duration(300+f.intN(int(f.ttl/time.Millisecond)+2000)) * time.Millisecond
		f.etcd.signal(syscall.SIGSTOP)
		time.Sleep(pause)
		f.etcd.signal(syscall.SIGCONT)
		return fmt.Sprintf("SIGSTOP etcd for %s, SIGCONT", pause)
	case 5:
		f.etcd.kill9()
		time.Sleep(time.Duration(f.intN(2000)) * time.Millisecond)
		if err := f.etcd.restart(); err != nil {
			f.t.Fatalf("restart etcd: %v", err)
		}
		return "SIGKILL etcd, restart"
	case 6:
		// A stop while etcd does not answer: the daemon waits out its
		// lease, not etcd.
		f.etcd.signal(syscall.SIGSTOP)
		time.Sleep(time.Duration(f.intN(1000)) * time.Millisecond)
		f.stopClean(d)
		f.etcd.signal(syscall.SIGCONT)
		f.restart(d, syscall.SIGTERM)
		return "SIGTERM " + d.host + " while etcd is paused"
	default:
		// A stop while the daemon starts or recovers: first a start
		// stopped early, then the one that stays.
		d.kill9()
		if err := d.launch(); err != nil {
			f.t.Fatal(err)
		}
		time.Sleep(time.Duration(1+f.intN(400)) * time.Millisecond)
		sig := []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM}[f.intN(2)]
		if sig == syscall.SIGKILL {
			d.kill9()
		} else {
			f.stopClean(d)
		}
		f.restart(d, sig)
		return fmt.Sprintf("%v %s during its start", sig, d.host)
	}
}

// bootOf is the boot a daemon runs now, as it says itself.
func (f *clusterFaults) bootOf(d *clusterDaemon) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	hosts, err := d.client.Hosts(ctx)
	if err != nil {
		return ""
	}
	for _, h := range hosts {
		if h.Self {
			return h.Boot
		}
	}
	return ""
}

// stopClean stops a daemon with SIGTERM; a clean exit (status 0) must
// leave nothing of its workers on its host.
func (f *clusterFaults) stopClean(d *clusterDaemon) {
	if !d.alive() {
		return
	}
	if err := d.stop(); err != nil {
		f.t.Errorf("%v\n%s", err, tail(d.logs.String(), 4000))
		return
	}
	if d.err != nil {
		// A SIGTERM before serve handles signals ends it as a crash
		// would; anything else is a failed stop.
		var ee *exec.ExitError
		if errors.As(d.err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return
			}
		}
		f.t.Errorf("%s exit on SIGTERM: %v\n%s", d.host, d.err, tail(d.logs.String(), 4000))
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := append(d.leftovers(), d.workers()...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Errorf("%s stopped cleanly and left: %v", d.host, left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// workers are the daemon's live worker processes: in its cgroups.
func (d *clusterDaemon) workers() []string {
	var out []string
	for _, p := range workerProcs(d.lab.binDir) {
		pid := strings.Split(strings.TrimPrefix(p, "process /proc/"), "/")[0]
		if cg, _ := os.ReadFile("/proc/" + pid + "/cgroup"); strings.Contains(string(cg), "/"+d.cgroup+"/") {
			out = append(out, p)
		}
	}
	return out
}

// restart starts a stopped daemon again, waiting out an etcd that is
// down.
func (f *clusterFaults) restart(d *clusterDaemon, after syscall.Signal) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := d.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("restart %s after %v: %v\n%s", d.host, after, err, tail(d.logs.String(), 4000))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// heal brings etcd and every daemon back.
func (f *clusterFaults) heal() {
	if !f.etcd.alive() {
		if err := f.etcd.restart(); err != nil {
			f.t.Fatalf("restart etcd: %v", err)
		}
	}
	f.etcd.signal(syscall.SIGCONT)
	for _, d := range f.ds {
		if d.alive() {
			d.signal(syscall.SIGCONT)
		} else {
			f.restart(d, 0)
		}
	}
}

// act does one thing a client would, through a random host: submit a
// job, or the same job to two hosts at once; cancel a recent job;
// collect ended jobs; submit a removed id again.
func (f *clusterFaults) act(round, worker int) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id, recent, gone, pick := f.draw("c", round, 12)
	d := f.pick()
	switch {
	case pick < 7:
		spec, retry := f.job(id, pick)
		hosts := []*clusterDaemon{d}
		if pick >= 5 {
			hosts = append(hosts, f.ds[(d.i)%len(f.ds)])
		}
		var wg sync.WaitGroup
		for _, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.submit(ctx, h.client, id, spec, retry)
			}()
		}
		wg.Wait()
	case pick < 9 && len(recent) > 0:
		d.client.Cancel(ctx, recent[f.intN(len(recent))], "fault test")
	case pick == 9:
		f.collect(ctx, d.client)
	case len(gone) > 0:
		f.resubmitRemoved(ctx, d.client, gone, " through "+d.host)
	}
}

// job is one of five kinds of job (kind picks).
func (f *clusterFaults) job(id string, kind int) ([]byte, *apitypes.RetryRequest) {
	spin := program(f.t, "spin.nox")
	switch kind % 5 {
	case 0, 4:
		return jobSpec(f.t, id, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{Reductions: 100}),
			&apitypes.RetryRequest{MaxAttempts: 3}
	case 1: // a certificate: its acceptance keeps an artifact
		return jobSpec(f.t, id, protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{uint64(kind), 7}, protocol.Limits{}),
			&apitypes.RetryRequest{MaxAttempts: 3}
	case 2: // a deadline, retried
		return jobSpec(f.t, id, protocol.OpExecute, spin, []uint64{60}, protocol.Limits{Reductions: 1 << 60, WallTimeMS: 800}),
			&apitypes.RetryRequest{MaxAttempts: 2}
	default: // runs long enough that faults find it running
		return jobSpec(f.t, id, protocol.OpExecute, spin, []uint64{22}, protocol.Limits{MemoryBytes: 12 << 30}),
			&apitypes.RetryRequest{MaxAttempts: 4}
	}
}

// listJobs lists every job through the first daemon that answers.
func (f *clusterFaults) listJobs(ctx context.Context) ([]apitypes.Job, *clusterDaemon, error) {
	var last error
	for _, d := range f.ds {
		jobs, err := d.client.List(ctx, "")
		if err == nil {
			return jobs, d, nil
		}
		last = err
	}
	return nil, nil, last
}

// check verifies the promises on the cluster as it is now.
func (f *clusterFaults) check(when string) {
	t := f.t
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jobs, d, err := f.listJobs(ctx)
	if err != nil {
		t.Fatalf("%s: list: %v", when, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	listed := map[string]int{}
	for _, j := range jobs {
		listed[j.JobID]++
	}
	for id := range f.submitted {
		if listed[id] == 0 && f.removedUnseen(ctx, d, id) {
			// A collection whose answer was lost with its host.
			f.removed[id] = true
			delete(f.submitted, id)
			continue
		}
		if listed[id] != 1 {
			t.Errorf("%s: job %s (submitted) listed %d times", when, id, listed[id])
		}
	}
	states := map[lifecycle.State]int{}
	for _, j := range jobs {
		st, err := d.client.Status(ctx, j.JobID)
		if err != nil {
			t.Fatalf("%s: status %s: %v", when, j.JobID, err)
		}
		ev, err := d.client.Events(ctx, j.JobID)
		if err != nil {
			t.Fatalf("%s: events %s: %v", when, j.JobID, err)
		}
		states[f.checkJob(when, st, ev)]++
		boots := map[uint32]string{}
		for _, a := range st.Attempts {
			boots[a.N] = a.Boot
			if a.Host == "" || a.Boot == "" || a.Generation == 0 {
				t.Errorf("%s: job %s attempt %d has no host, boot or generation: %+v", when, j.JobID, a.N, a)
			}
		}
		// A boot woken after its lease expired records nothing more
		// for its attempts. The event recovering one names its host
		// too, but a boot still registered wrote it (another host's, or
		// this host's next): the boot it recovers is no longer.
		for _, p := range f.pauses {
			for _, e := range ev {
				recovery := e.To == lifecycle.Unknown && strings.Contains(e.Reason, "left the cluster")
				if e.Attempt != 0 && e.Host == p.host && boots[e.Attempt] == p.boot && e.Time.After(p.woken) && !recovery {
					t.Errorf("%s: job %s: host %s recorded %s → %s for attempt %d of its boot %s at %s, after it woke past its lease (%s)",
						when, j.JobID, p.host, e.From, e.To, e.Attempt, p.boot, e.Time.Format(time.StampMicro), p.woken.Format(time.StampMicro))
				}
			}
		}
	}
	t.Logf("%s: %d jobs %v, %d removed", when, len(jobs), states, len(f.removed))
}

// removedUnseen says whether a job is gone because retention removed it:
// the store then refuses its id as removed. (A gc that committed and
// whose host was killed before it answered removed jobs the test did not
// hear of.)
func (f *clusterFaults) removedUnseen(ctx context.Context, d *clusterDaemon, id string) bool {
	if _, err := d.client.Status(ctx, id); !isUnknownJob(err) {
		return false
	}
	_, err := d.client.Submit(ctx, f.specs[id], 0, nil)
	var pe *protocol.Error
	return errors.As(err, &pe) && pe.Code == protocol.CodeInvalidJob && strings.Contains(pe.Message, "removed by retention")
}

// settle waits until every job has ended.
func (f *clusterFaults) settle(bound time.Duration) {
	deadline := time.Now().Add(bound)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		jobs, _, err := f.listJobs(ctx)
		cancel()
		open := 0
		for _, j := range jobs {
			if !j.State.Terminal() {
				open++
			}
		}
		if err == nil && open == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Errorf("%d jobs have not ended %s after the faults (%v)", open, bound, err)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (f *clusterFaults) dumpLogs() {
	for _, d := range f.ds {
		var keep []string
		for _, l := range strings.Split(d.logs.String(), "\n") {
			if !strings.Contains(l, `"level":"DEBUG"`) {
				keep = append(keep, l)
			}
		}
		f.t.Logf("%s's log (no debug):\n%s", d.host, tail(strings.Join(keep, "\n"), 20000))
	}
}
