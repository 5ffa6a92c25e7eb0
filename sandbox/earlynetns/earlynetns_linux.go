package earlynetns

import (
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	mu   sync.Mutex
	made chan *os.File // nil: none started, or taken
)

// Start begins making the namespace in the background, once.
func Start() {
	mu.Lock()
	defer mu.Unlock()
	if made != nil {
		return
	}
	ch := make(chan *os.File, 1)
	made = ch
	go func() { ch <- makeNetns() }()
}

// Take returns the namespace Start made, waiting for it if it is still
// being made, or nil when Start was not called, failed or was taken
// already. The caller owns the file.
func Take() *os.File {
	mu.Lock()
	ch := made
	made = nil
	mu.Unlock()
	if ch == nil {
		return nil
	}
	return <-ch
}

// Pending reports whether a namespace was started and not taken yet.
func Pending() bool {
	mu.Lock()
	defer mu.Unlock()
	return made != nil
}

// makeNetns unshares a network namespace on a locked thread, keeps a
// descriptor of it and moves the thread back; a thread that cannot move
// back stays locked and the runtime retires it with the goroutine. Any
// failure (no CAP_SYS_ADMIN) yields nil: the launch then makes its own.
func makeNetns() *os.File {
	runtime.LockOSThread()
	home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return nil
	}
	defer unix.Close(home)
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil
	}
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if unix.Setns(home, unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread()
	}
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), "netns")
}
