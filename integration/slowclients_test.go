package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// stormClients is how many slow connections the storm keeps open (the
// daemon's default cap is 1024): four times the cap, and as many as this
// machine's 20,000 descriptors allow the test and the daemon together
// without starving the rest of the suite.
const stormClients = 4000

// submitStarved is how long a submission may wait before the test calls
// it starved by the storm rather than slowed by a loaded machine.
const submitStarved = 2 * time.Minute

// TestSlowClientStorm: thousands of connections trickle bytes at the real
// daemon, a request line and headers that never end or a large body a
// byte at a time, reconnecting whenever the daemon drops them. Meanwhile
// a client submits jobs through fresh connections, as the CLI does. Every
// submission is answered and its job accepted; the daemon holds at most
// its cap of connections and its memory stays bounded.
func TestSlowClientStorm(t *testing.T) {
	requireIsolation(t)
	home := parallelHome(t)
	d := startDaemon(t, home, 2)
	defer d.stop(t)
	pid := d.cmd.Process.Pid
	sock := supervisor.SocketPath(home)
	idleRSS := procStatusKB(t, pid, "VmRSS")

	ctx, stopStorm := context.WithCancel(context.Background())
	var (
		storm      sync.WaitGroup
		dials      atomic.Int64
		dialErrors atomic.Int64
	)
	for i := range stormClients {
		storm.Add(1)
		go func() {
			defer storm.Done()
			trickle(ctx, sock, i%4 == 0, &dials, &dialErrors)
		}()
	}
	// The daemon's view while the storm runs: connections held, memory.
	var (
		maxConns, maxRSS atomic.Int64
		sampling         sync.WaitGroup
	)
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		for ctx.Err() == nil {
			maxConns.Store(max(maxConns.Load(), int64(socketFDs(pid))))
			maxRSS.Store(max(maxRSS.Load(), int64(procStatusKB(t, pid, "VmRSS"))))
			time.Sleep(100 * time.Millisecond)
		}
	}()
	// On every way out, the storm and the sampling end before the daemon
	// stops (defers run last first): a sample of a stopped daemon fails.
	defer func() {
		stopStorm()
		storm.Wait()
		sampling.Wait()
	}()
	waitFor(t, 60*time.Second, "the storm to fill the daemon's cap", func() bool { return socketFDs(pid) >= api.DefaultMaxConns })

	// Submissions during the storm, each on a new connection.
	const submits = 200
	lat := make([]time.Duration, 0, submits)
	var ids []string
	for i := range submits {
		id := fmt.Sprintf("storm-%03d", i)
		b := jobSpec(t, id, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{uint64(i), 1}, protocol.Limits{})
		cl := api.NewClient(sock)
		// A submission the storm starves never returns: the deadline
		// only tells that from a slow one (the latencies are logged, not
		// bounded: on a loaded machine they say more about the load).
		sctx, cancel := context.WithTimeout(context.Background(), submitStarved)
		start := time.Now()
		_, err := cl.Submit(sctx, b, 0, nil)
		cancel()
		if err != nil {
			t.Fatalf("submit %d during the storm: %v", i, err)
		}
		lat = append(lat, time.Since(start))
		ids = append(ids, id)
		time.Sleep(50 * time.Millisecond)
	}
	metrics, err := api.NewClient(sock).Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stopStorm()
	storm.Wait()
	sampling.Wait()
	for _, id := range ids {
		st, err := d.client.WaitEnd(context.Background(), id)
		if err != nil || st.Job.State != "accepted" {
			t.Fatalf("%s: %v %+v", id, err, st)
		}
	}
	hwm := procStatusKB(t, pid, "VmHWM")
	t.Logf("storm: %d slow clients (a quarter trickling bodies), %d connections made (%d refused by the kernel's backlog)", stormClients, dials.Load(), dialErrors.Load())
	t.Logf("daemon: at most %d sockets open (cap %d), RSS idle %d KiB, at most %d KiB during the storm, peak (VmHWM) %d KiB",
		maxConns.Load(), api.DefaultMaxConns, idleRSS, maxRSS.Load(), hwm)
	t.Logf("%s, %s", metricLine(metrics, "cyber_supervisor_api_connections_evicted_total"), metricLine(metrics, "cyber_supervisor_api_connections_refused_total"))
	t.Logf("%d submissions during the storm: p50 %.1f ms, p99 %.1f ms, max %.1f ms", submits,
		loadbench.Millis(loadbench.Percentile(lat, 0.5)), loadbench.Millis(loadbench.Percentile(lat, 0.99)), loadbench.Millis(loadbench.Percentile(lat, 1)))
	// The bounds. The cap counts API connections; the daemon's other
	// sockets (workers' plugin connections) come on top.
	if n := maxConns.Load(); n > api.DefaultMaxConns+64 {
		t.Errorf("the daemon held %d sockets, cap %d", n, api.DefaultMaxConns)
	}
	// Before the cap, 19,890 slow connections took the daemon to 590 MB.
	if hwm > 256<<10 {
		t.Errorf("the daemon's peak RSS was %d KiB", hwm)
	}
}

// trickle keeps one slow connection open until ctx ends: it sends a
// request's start and then one byte a second, and connects again whenever
// the daemon closes it. Headers that never end, or a large body.
func trickle(ctx context.Context, sock string, body bool, dials, dialErrors *atomic.Int64) {
	for ctx.Err() == nil {
		c, err := net.Dial("unix", sock)
		dials.Add(1)
		if err != nil {
			dialErrors.Add(1)
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		start := "GET /v1/jobs HTTP/1.1\r\nHost: supervisor\r\nX-Slow: "
		if body {
			start = "POST /v1/jobs HTTP/1.1\r\nHost: supervisor\r\nContent-Length: 1000000\r\n\r\n{\"spec\":"
		}
		_, err = c.Write([]byte(start))
		for err == nil && ctx.Err() == nil {
			sleepCtx(ctx, time.Second)
			_, err = c.Write([]byte(" "))
		}
		c.Close()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// socketFDs counts the process's open sockets.
func socketFDs(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// procStatusKB reads a "kB" field of /proc/PID/status.
func procStatusKB(t testing.TB, pid int, field string) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func metricLine(text []byte, name string) string {
	for _, l := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return name + " missing"
}

func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
