package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Run-time attacks: the worker receives its job and attacks from inside
// before (or instead of) doing it. Each step reports on stderr as
// "hostile: STEP: RESULT" ("ok" or the error), which the supervisor logs;
// the tests judge by what they see from the host and use these lines only
// as evidence that a step was tried.

func report(step string, err error) {
	res := "ok"
	if err != nil {
		res = err.Error()
	}
	fmt.Fprintf(os.Stderr, "hostile: %s: %s\n", step, res)
}

// plant leaves in the work dir everything a root worker could once leave
// on the host's disk: a setuid/setgid executable (created with those
// bits: open's mode is not filtered), and tries a setgid directory, a
// device node, a FIFO, a symlink, a hard link to its own binary, a socket
// and an extended attribute.
func plant(dir string) {
	suid := filepath.Join(dir, "suid")
	fd, err := unix.Open(suid, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o6755)
	if err == nil {
		_, err = unix.Write(fd, []byte("#!/bin/sh\nid\n"))
		unix.Close(fd)
	}
	report("create setuid file", err)
	report("chmod 06755", unix.Chmod(suid, 0o6755))
	report("mkdir setgid", unix.Mkdir(filepath.Join(dir, "sgid-dir"), 0o2777))
	report("mknod device", unix.Mknod(filepath.Join(dir, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	report("mkfifo", unix.Mkfifo(filepath.Join(dir, "fifo"), 0o666))
	report("symlink", unix.Symlink("/proc/1/root", filepath.Join(dir, "link")))
	report("hard link", unix.Link("/bin/worker", filepath.Join(dir, "worker-link")))
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err == nil {
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
	}
	report("socket file", err)
	report("setxattr", unix.Setxattr(suid, "user.planted", []byte("x"), 0))
}

// fill writes 1 MiB files into the work dir until the file system refuses.
func fill(dir string) {
	buf := make([]byte, 1<<20)
	var total int64
	var err error
	for i := 0; err == nil && i < 64; i++ { // 64 MiB at most: a test that finds no bound fails, it does not fill the disk
		var f *os.File
		if f, err = os.Create(filepath.Join(dir, fmt.Sprintf("fill-%05d", i))); err != nil {
			break
		}
		var n int
		n, err = f.Write(buf)
		total += int64(n)
		f.Close()
	}
	report("fill", fmt.Errorf("%d bytes written, then: %v", total, err))
}

// floodStream writes into the supervisor's certificate stream
// (protocol.ArtifactStreamName) until a write fails: the supervisor
// counts what it reads against the job's artifact limit, whatever this
// worker does. 256 MiB at most: a test that finds no bound fails, it does
// not fill the disk.
func floodStream(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, protocol.ArtifactStreamName), os.O_WRONLY, 0)
	if err != nil {
		report("stream", err)
		return
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var total int64
	for err == nil && total < 256<<20 {
		var n int
		n, err = f.Write(buf)
		total += int64(n)
	}
	report("stream", fmt.Errorf("%d bytes written, then: %v", total, err))
}

// prefixStream writes bytes of its own into the certificate stream
// before the real worker writes the certificate, and never closes it:
// the supervisor must neither wait for an end of file that never comes
// nor take the mixed bytes for the certificate the worker reports. A raw
// descriptor, not an *os.File, whose finalizer would close it.
func prefixStream(dir string) {
	fd, err := unix.Open(filepath.Join(dir, protocol.ArtifactStreamName), unix.O_WRONLY, 0)
	if err == nil {
		_, err = unix.Write(fd, []byte("not a certificate"))
	}
	report("stream prefix", err)
}

// deniedSyscalls are what nox-worker never calls; the allowlist must
// refuse each (issue #11 names the first ten).
var deniedSyscalls = []struct {
	name string
	nr   uintptr
	args [3]uintptr
}{
	{"sync", unix.SYS_SYNC, [3]uintptr{}},
	{"syncfs", unix.SYS_SYNCFS, [3]uintptr{0}},
	{"memfd_create", unix.SYS_MEMFD_CREATE, [3]uintptr{0, 0}},
	{"pidfd_open", unix.SYS_PIDFD_OPEN, [3]uintptr{1, 0}},
	{"mbind", unix.SYS_MBIND, [3]uintptr{}},
	{"move_pages", unix.SYS_MOVE_PAGES, [3]uintptr{}},
	{"msgget", unix.SYS_MSGGET, [3]uintptr{0, 0}},
	{"inotify_init1", unix.SYS_INOTIFY_INIT1, [3]uintptr{unix.IN_CLOEXEC}},
	{"personality", unix.SYS_PERSONALITY, [3]uintptr{0xffffffff}},
	{"landlock_create_ruleset", unix.SYS_LANDLOCK_CREATE_RULESET, [3]uintptr{0, 0, 1}},
	{"landlock_add_rule", unix.SYS_LANDLOCK_ADD_RULE, [3]uintptr{}},
	{"landlock_restrict_self", unix.SYS_LANDLOCK_RESTRICT_SELF, [3]uintptr{}},
	{"ptrace", unix.SYS_PTRACE, [3]uintptr{unix.PTRACE_TRACEME}},
	{"mount", unix.SYS_MOUNT, [3]uintptr{}},
	{"unshare", unix.SYS_UNSHARE, [3]uintptr{unix.CLONE_NEWUSER}},
	{"setuid", unix.SYS_SETUID, [3]uintptr{0}},
	{"keyctl", unix.SYS_KEYCTL, [3]uintptr{}},
	{"bpf", unix.SYS_BPF, [3]uintptr{}},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP, [3]uintptr{1, 0}},
	{"userfaultfd", unix.SYS_USERFAULTFD, [3]uintptr{}},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [3]uintptr{}},
	{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [3]uintptr{}},
	{"kill", unix.SYS_KILL, [3]uintptr{0, 0}},
	{"socketpair", unix.SYS_SOCKETPAIR, [3]uintptr{unix.AF_UNIX, unix.SOCK_STREAM, 0}},
	{"connect", unix.SYS_CONNECT, [3]uintptr{}},
	{"pipe2", unix.SYS_PIPE2, [3]uintptr{}},
	{"getdents64", unix.SYS_GETDENTS64, [3]uintptr{}},
	{"uname", unix.SYS_UNAME, [3]uintptr{}},
	{"socket(AF_INET)", unix.SYS_SOCKET, [3]uintptr{unix.AF_INET, unix.SOCK_STREAM, 0}},
	{"socket(AF_NETLINK)", unix.SYS_SOCKET, [3]uintptr{unix.AF_NETLINK, unix.SOCK_RAW, 0}},
	{"clone(CLONE_NEWUSER)", unix.SYS_CLONE, [3]uintptr{unix.CLONE_NEWUSER | uintptr(unix.SIGCHLD)}},
	{"prctl(PR_SET_DUMPABLE)", unix.SYS_PRCTL, [3]uintptr{unix.PR_SET_DUMPABLE, 1}},
}

// callDenied makes each call on a thread of its own (a call that passed
// could change the thread) and reports its errno.
func callDenied() {
	for _, c := range deniedSyscalls {
		done := make(chan unix.Errno)
		go func() {
			lockThread()
			_, _, e := unix.RawSyscall(c.nr, c.args[0], c.args[1], c.args[2])
			done <- e
		}()
		e := <-done
		var err error
		if e != 0 {
			err = e
		}
		report("syscall "+c.name, err)
	}
}

// readCgroup reports the worker's view of its cgroups, one line each.
func readCgroup() {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		report("read /proc/self/cgroup", err)
		return
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		report("cgroup line", errors.New(l))
	}
}

// hostileService runs the attack's steps, then (unless the attack holds)
// the real job, on the real worker.
type hostileService struct {
	protocol.Service
	before func(dir string)
	hold   bool
	holdOp protocol.Operation
}

func (h *hostileService) Run(ctx context.Context, req protocol.RunRequest) (protocol.Result, error) {
	h.before(req.WorkDir)
	if h.hold || h.holds(req) {
		report("holding", nil)
		<-ctx.Done()
		return protocol.Result{}, ctx.Err()
	}
	return h.Service.Run(ctx, req)
}

// holds reports whether req is a job of the operation the attack holds.
func (h *hostileService) holds(req protocol.RunRequest) bool {
	if h.holdOp == "" {
		return false
	}
	spec, err := protocol.ParseJobSpec(req.JobSpec)
	return err == nil && spec.Operation == h.holdOp
}

// lockThread keeps a goroutine on its thread until it exits, so a thread
// a passing call changed is retired with it.
func lockThread() { runtime.LockOSThread() }
