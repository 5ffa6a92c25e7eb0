package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/sandbox/internal/testplugin"
)

const envReaperHelper = "CYBER_SANDBOX_TEST_REAPER"

// TestReaperCollectsOrphans runs in a child process, because becoming a
// subreaper changes the whole test process.
func TestReaperCollectsOrphans(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = []string{envReaperHelper + "=1"}
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reaper helper: %v\n%s", err, out)
	}
}

func reaperHelper() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return 1
	}
	if err := BecomeSubreaper(); err != nil {
		return fail("BecomeSubreaper: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fail("%v", err)
	}

	// An intermediate process starts a grandchild in its own session and
	// exits: the grandchild is re-parented to us.
	mid := exec.Command("/bin/sh", "-c", `"$0" >/dev/null 2>&1 </dev/null & echo $!`, self)
	mid.Env = []string{testplugin.BehaviorEnv + "=sleep"}
	mid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	mid.WaitDelay = 5 * time.Second
	out, err := mid.Output()
	if err != nil {
		return fail("spawner: %v", err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return fail("spawner output %q", out)
	}
	if ppid := parentOf(orphan); ppid != os.Getpid() {
		return fail("orphan %d has parent %d, want the subreaper %d", orphan, ppid, os.Getpid())
	}
	if err := syscall.Kill(orphan, syscall.SIGKILL); err != nil {
		return fail("kill orphan: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			return fail("orphan %d not reaped", orphan)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A direct child whose Wait comes late (but within the grace) keeps its
	// status: the reaper must not steal it.
	late := exec.Command(self)
	late.Env = []string{testplugin.Handshake.MagicCookieKey + "=" + testplugin.Handshake.MagicCookieValue,
		testplugin.BehaviorEnv + "=exit"}
	if err := late.Start(); err != nil {
		return fail("start: %v", err)
	}

	time.Sleep(reapGrace / 4)
	err = late.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		return fail("late Wait = %v, want exit status 3 (status stolen?)", err)
	}
	return 0
}

func parentOf(pid int) int {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}
