package earlynetns

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/internal/prepared"
)

// ahead is the namespace made ahead of the first launch that takes one.
var ahead prepared.Value[*os.File]

// Start begins making a namespace in the background, unless one is being
// made or made and not taken. A failure (no CAP_SYS_ADMIN) is not
// reported: Take then returns nil and the launch makes its own.
func Start() {
	ahead.Start(func() *os.File {
		f, _ := New()
		return f
	})
}

// Take returns the namespace Start made, waiting for it if it is still
// being made, or nil when Start was not called, failed or was taken
// already. The caller owns the file.
func Take() *os.File {
	f, _ := ahead.Take()
	return f
}

// Pending reports whether a namespace was started and not taken yet.
func Pending() bool { return ahead.Pending() }

// New makes a network namespace and returns a descriptor of it.
func New() (*os.File, error) {
	var f *os.File
	err := InOther(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("sandbox: unshare(CLONE_NEWNET): %w", err)
		}
		return nil
	}, func() error {
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("sandbox: open the new /proc/thread-self/ns/net: %w", err)
		}
		f = os.NewFile(uintptr(fd), "netns")
		return nil
	})
	return f, err
}

// InOther runs enter, which moves the calling thread to another network
// namespace (unshare or setns), then do, on a locked thread of its own
// that moves back to the process's namespace afterwards. A thread that
// cannot move back stays locked, and the runtime retires it with its
// goroutine instead of running anything else there. (A goroutine that
// exits locked on the main thread would wedge it in the other namespace:
// package sandbox's tests check every thread.)
func InOther(enter, do func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("sandbox: open /proc/thread-self/ns/net: %w", err)
			return
		}
		defer unix.Close(home)
		if err := enter(); err != nil {
			if unix.Setns(home, unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			}
			ch <- err
			return
		}
		err = do()
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}
