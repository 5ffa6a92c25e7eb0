//go:build crashpoints

package fencing

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// CrashpointEnv names the step a crash test stops at: "STEP" (its first
// time) or "STEP@N" (its N-th). The build with -tags crashpoints is the
// real supervisor with these stops added; the test then kills or
// signals the stopped process at a known point of an act's path
// (integration/fencing_steps_test.go). The steps, in the order an act
// passes them:
//
//	before-attempt  the run suspended at an act; its attempt is signed, not recorded
//	before-claim    the attempt is durable; its claim is not
//	before-act      the claim is durable; the act is not called
//	before-outcome  the act returned; its outcome is not recorded
//	before-consume  the outcome is durable; the program has not taken it
const CrashpointEnv = "CYBER_SUPERVISOR_CRASHPOINT"

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
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}
