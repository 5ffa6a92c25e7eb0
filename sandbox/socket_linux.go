package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The worker announces its plugin socket by name in the go-plugin
// handshake, and the supervisor, usually root, connects to it. A worker
// controls the entries of its socket directory, so a name is not enough:
// the entry could be a symlink or a hard link to a host socket, or be
// swapped for one between a check and a connect by path. The supervisor
// therefore pins the entry once, with an O_PATH|O_NOFOLLOW open relative to
// the socket directory (an isolated worker's: the tmpfs its init mounted on
// /run/plugin, reached through /proc/PID/root; an unisolated worker's: the
// host directory go-plugin made), checks that what it pinned is a socket
// the worker bound (a socket inode, one link, owned by the worker's host
// identity), and from then on connects only through that descriptor
// ("/proc/self/fd/N" resolves to the pinned inode, whatever the name
// points to by then).

// workerSocket is the pinned socket of one worker.
type workerSocket struct {
	f *os.File // O_PATH descriptor of the socket inode
}

// procPath is the name connect(2) resolves to the pinned inode.
func (w *workerSocket) procPath() string {
	return "/proc/self/fd/" + strconv.Itoa(int(w.f.Fd()))
}

// pinWorkerSocket resolves the address the worker announced to the socket
// it bound in dir, a descriptor of its socket directory whose host name is
// hostDir. announcedDir is the directory the worker sees (the jail's
// socket dir, or hostDir itself for an unisolated worker).
func pinWorkerSocket(network, addr, announcedDir string, dir int, hostDir string, owner int) (*workerSocket, error) {
	if network != "unix" {
		return nil, fmt.Errorf("%w: %s address %q (only unix sockets cross the jail)", ErrAddress, network, addr)
	}
	if announcedDir == "" || !path.IsAbs(addr) {
		return nil, fmt.Errorf("%w: %q", ErrAddress, addr)
	}
	name, ok := strings.CutPrefix(path.Clean(addr), announcedDir+"/")
	if !ok || name == "" || strings.Contains(name, "/") || name == ".." {
		return nil, fmt.Errorf("%w: %q is not directly in %s", ErrAddress, addr, announcedDir)
	}
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", ErrAddress, filepath.Join(hostDir, name), err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: stat %s: %v", ErrAddress, filepath.Join(hostDir, name), err)
	}
	if reason := socketEntryProblem(&st, owner); reason != "" {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %s %s", ErrAddress, filepath.Join(hostDir, name), reason)
	}
	return &workerSocket{f: os.NewFile(uintptr(fd), filepath.Join(hostDir, name))}, nil
}

// socketEntryProblem says what disqualifies a pinned entry, "" if nothing.
func socketEntryProblem(st *unix.Stat_t, owner int) string {
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return "is a symlink"
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		return fmt.Sprintf("is not a socket (mode %#o)", st.Mode&unix.S_IFMT)
	case st.Nlink != 1:
		return fmt.Sprintf("has %d links (a socket the worker bound has one)", st.Nlink)
	case int(st.Uid) != owner:
		return fmt.Sprintf("is owned by uid %d, not the worker's uid %d", st.Uid, owner)
	}
	return ""
}

// workerHostUID is the host uid the worker's files belong to: RunAs, or
// (identity map or uid 0 inside a user namespace mapped to us) our own.
func (s *Sandbox) workerHostUID() int {
	if id := s.cfg.RunAs; id != nil {
		return int(id.UID)
	}
	return os.Geteuid()
}

// pinSocket is PluginToHost: it pins the announced socket once and returns
// the descriptor path, so that any dialer (go-plugin's own for net/rpc, or
// dialWorker for gRPC) reaches the pinned inode and nothing else.
func (s *Sandbox) pinSocket(network, addr string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.sock != nil:
		return "", "", fmt.Errorf("%w: the worker announced a second address %q", ErrAddress, addr)
	case s.sockClosed:
		return "", "", fmt.Errorf("%w: %q announced after teardown", ErrAddress, addr)
	}
	announced := s.hostSocketDir
	if s.cfg.Mode == ModeIsolated {
		announced = jailSocketDir
	}
	dir, dirName, err := s.openSocketDirLocked()
	if err != nil {
		return "", "", err // not the worker's choice: no addrErr
	}
	defer unix.Close(dir)
	ws, err := pinWorkerSocket(network, addr, announced, dir, dirName, s.workerHostUID())
	if err != nil {
		s.addrErr = err
		return "", "", err
	}
	s.sock = ws
	return "unix", ws.procPath(), nil
}

// openSocketDirLocked opens the directory the worker binds its socket in
// (O_PATH, with s.mu held). An isolated worker's is the tmpfs its init
// mounted on /run/plugin in the worker's own mount namespace, on no host
// file system (docs/sandbox.md, "Socket dir"); the host reaches it only
// through the worker's root, /proc/PID/root. The pid is ours while s.mu
// is held and the worker not seen exited (the waiter marks the exit under
// s.mu before it reaps), and the worker cannot change its root or what is
// mounted in it: pivot_root, chroot and mount need capabilities it does
// not have, and seccomp denies them.
func (s *Sandbox) openSocketDirLocked() (int, string, error) {
	name := s.hostSocketDir
	if s.cfg.Mode == ModeIsolated {
		if s.pid == 0 || s.exited {
			return -1, "", fmt.Errorf("sandbox: the worker is gone, its socket dir with it")
		}
		name = "/proc/" + strconv.Itoa(s.pid) + "/root" + jailSocketDir
	}
	if name == "" {
		return -1, "", fmt.Errorf("sandbox: no socket dir")
	}
	dir, err := unix.Open(name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("sandbox: open socket dir %s: %w", name, err)
	}
	return dir, name, nil
}

// dialWorker is the gRPC dialer of the worker connection: it connects
// through a duplicate of the pinned descriptor, so a reconnect after the
// sandbox is gone can never reach whatever reused the descriptor number.
func (s *Sandbox) dialWorker(ctx context.Context, _ string) (net.Conn, error) {
	s.mu.Lock()
	if s.sock == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: no verified worker socket to dial", ErrAddress)
	}
	dup, err := unix.FcntlInt(s.sock.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("sandbox: duplicate worker socket descriptor: %w", err)
	}
	defer unix.Close(dup)
	var d net.Dialer
	return d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(dup))
}

// AddressRefused is the reason the worker's announced address was refused,
// nil if it was not: a worker that steers the supervisor elsewhere is
// hostile, and its attempt must not be retried as if the launch had failed
// by chance.
func (s *Sandbox) AddressRefused() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrErr
}

// closeSocket drops the pinned descriptor (teardown).
func (s *Sandbox) closeSocket() {
	s.mu.Lock()
	ws := s.sock
	s.sock, s.sockClosed = nil, true
	s.mu.Unlock()
	if ws != nil {
		ws.f.Close()
	}
}
