package limits_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/limits/limitstest"
	"golang.org/x/sys/unix"
)

// Helper processes: the test binary re-executed with helperEnv naming a
// mode, so the tests need no external programs.
const (
	helperEnv = "LIMITS_TEST_HELPER"
	gateEnv   = "LIMITS_TEST_GATE" // "1": block on fd 3 until released
	argEnv    = "LIMITS_TEST_ARG"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Getenv(argEnv)))
	}
	// Race-built helpers would otherwise sleep 1 s at every exit.
	if _, ok := os.LookupEnv("GORACE"); !ok {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	// Orphans (double forks, fork bombs) must come back to us to be
	// reaped, not linger as zombies of a lazy PID 1.
	if err := limitstest.BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "warning:", err)
	}
	os.Exit(m.Run())
}

func runHelper(mode, arg string) int {
	if os.Getenv(gateEnv) == "1" {
		gate := os.NewFile(3, "gate")
		var b [1]byte
		if n, _ := gate.Read(b[:]); n != 1 {
			return 111
		}
		gate.Close()
	}
	switch mode {
	case "alloc": // touch arg MiB, then exit 0
		mib, _ := strconv.Atoi(arg)
		buf := make([]byte, mib<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		runtime.KeepAlive(buf)
		fmt.Println("allocated")
		return 0
	case "sleep": // report ready, then sleep until killed
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "orphan": // like sleep, but ignoring SIGTERM and SIGHUP
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "doublefork": // start a setsid'd orphan, print its pid, exit
		signal.Ignore(syscall.SIGTERM)
		c := helperCmd("orphan", "")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := c.StdoutPipe()
		if err != nil {
			return 3
		}
		if err := c.Start(); err != nil {
			return 4
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			return 5
		}
		fmt.Println(c.Process.Pid)
		return 0 // the grandchild is now an orphan
	case "forkbomb": // start copies of itself as fast as the kernel allows
		fmt.Println(os.Getpid())
		for {
			c := helperCmd("forkbomb", "")
			c.Stdout = os.Stdout
			if err := c.Start(); err == nil {
				go c.Wait()
			} else {
				time.Sleep(time.Millisecond)
			}
		}
	case "busy": // spin for arg milliseconds of wall time
		ms, _ := strconv.Atoi(arg)
		end := time.Now().Add(time.Duration(ms) * time.Millisecond)
		x := 0
		for time.Now().Before(end) {
			for i := 0; i < 1000; i++ {
				x += i
			}
		}
		runtime.KeepAlive(x)
		return 0
	case "spin-cpu": // spin until the process has used arg milliseconds of CPU
		ms, _ := strconv.Atoi(arg)
		x := 0
		for processCPU() < time.Duration(ms)*time.Millisecond {
			for i := 0; i < 100000; i++ {
				x += i
			}
		}
		runtime.KeepAlive(x)
		return 0
	case "tree": // start arg-1 sleeping children, report ready, sleep
		n, _ := strconv.Atoi(arg)
		for i := 1; i < n; i++ {
			c := helperCmd("sleep", "")
			out, err := c.StdoutPipe()
			if err != nil {
				return 3
			}
			if err := c.Start(); err != nil {
				return 4
			}
			if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "ready" {
				return 5
			}
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "probe-json": // probe (as whatever user we run as), print JSON
		m, err := limits.NewManager(limits.Options{Name: arg})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		b, _ := json.Marshal(m.Capabilities())
		os.Stdout.Write(b)
		_ = m.Close(context.Background())
		return 0
	case "cgroup": // print our cgroups (placement check)
		b, _ := os.ReadFile("/proc/self/cgroup")
		os.Stdout.Write(b)
		return 0
	}
	return 2
}

func helperCmd(mode, arg string) *exec.Cmd {
	c := exec.Command("/proc/self/exe", "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"="+mode, argEnv+"="+arg, gateEnv+"=0")
	return c
}

// helper is a helper process started the way the launcher must start a
// worker: inside the v2 group from its first instruction (CgroupFD), held
// at a gate until Place has put it in the v1 groups, then released.
type helper struct {
	cmd  *exec.Cmd
	out  *bufio.Reader
	done chan struct{}
	err  error // valid after done
}

func startHelper(t testing.TB, g *limits.Group, mode, arg string) *helper {
	t.Helper()
	return startHelperFD(t, g, mode, arg, true)
}

func startHelperFD(t testing.TB, g *limits.Group, mode, arg string, useFD bool) *helper {
	t.Helper()
	c := helperCmd(mode, arg)
	c.Env = append(c.Env, gateEnv+"=1")
	gr, gw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	or, ow, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.ExtraFiles = []*os.File{gr}
	c.Stdout = ow
	if mode != "forkbomb" { // bomb processes die noisily when a thread cannot be made
		c.Stderr = os.Stderr
	}
	if fd, ok := g.CgroupFD(); ok && useFD {
		c.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start helper %s: %v", mode, err)
	}
	gr.Close()
	ow.Close()
	h := &helper{cmd: c, out: bufio.NewReader(or), done: make(chan struct{})}
	go func() {
		h.err = c.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		_ = c.Process.Kill() // only if the test failed before killing it
		<-h.done
		or.Close()
	})
	if err := g.Place(c.Process.Pid); err != nil {
		gw.Close()
		t.Fatalf("place helper %d: %v", c.Process.Pid, err)
	}
	if _, err := gw.Write([]byte{1}); err != nil {
		t.Fatalf("release helper: %v", err)
	}
	gw.Close()
	return h
}

func (h *helper) pid() int { return h.cmd.Process.Pid }

// line reads one line of the helper's stdout, bounded in time.
func (h *helper) line(t testing.TB) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := h.out.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("helper %d output: %v (got %q)", h.pid(), r.err, r.s)
		}
		return r.s
	case <-time.After(20 * time.Second):
		t.Fatalf("helper %d: no output within 20s", h.pid())
		return ""
	}
}

// wait waits for the helper to exit, bounded in time.
func (h *helper) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-h.done:
		return h.err
	case <-time.After(30 * time.Second):
		t.Fatalf("helper %d did not exit within 30s", h.pid())
		return nil
	}
}

func exitSignal(err error) (syscall.Signal, bool) {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return 0, false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return ws.Signal(), true
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}
