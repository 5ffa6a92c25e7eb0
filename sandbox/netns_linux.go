package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// netnsPool recycles the network namespaces of isolated workers. Making
// one is most of what a gated fork costs the kernel: 0.67 ms of CPU per
// worker in copy_net_ns (registering the namespace's sysctl tables), and
// ~0.3 ms more when a kworker tears it down (cleanup_net, whose
// inet_twsk_purge walks the host's whole TCP hash), measured with perf
// under 100 trivial jobs/s — about a twentieth of everything a job costs.
//
// A namespace belongs to one worker at a time: its init joins it with
// setns before it builds the jail (gate.Config.Netns), in place of the
// CLONE_NEWNET it would otherwise get. It comes back only when nothing of
// that worker can be left in it or have changed it:
//
//   - the init was pid 1 of its own PID namespace and has been reaped, and
//     the kernel kills and reaps every process of a PID namespace before
//     the exit of its init completes; and
//   - seccomp allowed the worker AF_UNIX sockets only: no IP, netlink or
//     packet socket, so no address, route, counter or port it could have
//     touched, and lo stays down as the namespace was made. Its unix
//     sockets closed with its processes.
//
// Otherwise the namespace is closed, as a fresh one would have been.
type netnsPool struct {
	mu   sync.Mutex
	idle []*os.File
}

// netnsIdleMax bounds the namespaces kept: more than the workers that ever
// run at once on a node would only hold kernel memory.
const netnsIdleMax = 64

var theNetns netnsPool

// get returns an unused network namespace: an idle one, or a new one.
func (p *netnsPool) get() (*os.File, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		f := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return f, nil
	}
	p.mu.Unlock()
	return newNetns()
}

// put takes back a namespace in which nothing is left (see netnsPool).
func (p *netnsPool) put(f *os.File) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= netnsIdleMax {
		f.Close()
		return
	}
	p.idle = append(p.idle, f)
}

// netnsLease is the namespace a gated init joins.
type netnsLease struct{ f *os.File }

// leaseNetns returns a recycled namespace for an init started with cfg,
// or nil when cfg does not allow recycling (then the init gets a fresh
// one through CLONE_NEWNET) or none can be made (no CAP_SYS_ADMIN).
func leaseNetns(cfg *Config) *netnsLease {
	ns := cfg.Namespaces
	if cfg.Mode != ModeIsolated || ns&NamespaceNet == 0 || ns&NamespacePID == 0 || ns&NamespaceUser != 0 || !cfg.Seccomp {
		return nil
	}
	f, err := theNetns.get()
	if err != nil {
		return nil
	}
	return &netnsLease{f: f}
}

// end settles the namespace once its init is reaped (so its PID
// namespace is empty): back to the pool when what ran in it was limited
// to AF_UNIX sockets (or nothing ran), else closed.
func (l *netnsLease) end(unixOnly bool) {
	if l == nil || l.f == nil {
		return
	}
	if unixOnly {
		theNetns.put(l.f)
	} else {
		l.f.Close()
	}
	l.f = nil
}

// newNetns makes a network namespace and returns a descriptor of it.
func newNetns() (*os.File, error) {
	var f *os.File
	err := inOtherNetns(func() error {
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

// inOtherNetns runs enter, which moves the calling thread to another
// network namespace (unshare or setns), then do, on a locked thread of its
// own that moves back to the process's namespace afterwards. A thread that
// cannot move back stays locked, and the runtime retires it with its
// goroutine instead of running anything else there. (A goroutine that
// exits locked on the main thread would wedge it in the other namespace:
// the tests check every thread.)
func inOtherNetns(enter, do func() error) error {
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
