//go:build crashpoints

package fencing

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// crashAt is the step to stop at (CrashpointEnv) and how many of its
// passes are left until then.
var crashAt = struct {
	sync.Mutex
	step string
	left int
}{}

func init() {
	v := os.Getenv(CrashpointEnv)
	if v == "" {
		return
	}
	step, nth, _ := strings.Cut(v, "@")
	n := 1
	if nth != "" {
		var err error
		if n, err = strconv.Atoi(nth); err != nil || n < 1 {
			panic(fmt.Sprintf("%s=%q: the count after @ must be a positive number", CrashpointEnv, v))
		}
	}
	crashAt.step, crashAt.left = step, n
}

// crashpoint stops the whole process (SIGSTOP) at the chosen step's
// N-th pass, after saying so on stderr: the test waits for the stop and
// then kills the process or lets it go on (SIGCONT).
func crashpoint(step string) {
	crashAt.Lock()
	defer crashAt.Unlock()
	if crashAt.step != step || crashAt.left == 0 {
		return
	}
	if crashAt.left--; crashAt.left > 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "crashpoint %s: stopped\n", step)
	// To this thread: it stops before it returns from the call. Sent to
	// the process, the stop may reach another thread first while this one
	// goes on into the next step.
	// Locked, so that the goroutine is still on the thread it names.
	runtime.LockOSThread()
	syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
	runtime.UnlockOSThread()
}
