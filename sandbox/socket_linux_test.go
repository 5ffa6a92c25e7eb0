package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listenUnix binds a socket at p and counts the connections it accepts.
func listenUnix(t *testing.T, p string) (accepted <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ch := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
			ch <- struct{}{}
		}
	}()
	return ch
}

func TestPinWorkerSocketRefusesWhatTheWorkerDidNotBind(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(t.TempDir(), "host.sock") // a "host daemon's" socket
	hostAccepted := listenUnix(t, host)
	listenUnix(t, filepath.Join(dir, "own"))
	mustDo(t, os.Symlink(host, filepath.Join(dir, "symlink")))
	mustDo(t, os.Symlink("own", filepath.Join(dir, "relative-symlink")))
	mustDo(t, os.Link(filepath.Join(dir, "own"), filepath.Join(dir, "own-hardlink")))
	mustDo(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o600))
	mustDo(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	mustDo(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	me := os.Geteuid()
	dirFD, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	mustDo(t, err)
	defer unix.Close(dirFD)

	for _, c := range []struct{ net, addr, want string }{
		{"tcp", "127.0.0.1:1234", "only unix sockets"},
		{"unix", "/run/plugin/../../etc/x", "not directly in"},
		{"unix", "/run/plugin/a/b", "not directly in"},
		{"unix", "/run/plugin", "not directly in"},
		{"unix", "relative", ""},
		{"unix", "/elsewhere/sock", "not directly in"},
		{"unix", "/run/plugin/missing", "no such file"},
		{"unix", "/run/plugin/symlink", "is a symlink"},
		{"unix", "/run/plugin/relative-symlink", "is a symlink"},
		{"unix", "/run/plugin/own-hardlink", "has 2 links"},
		{"unix", "/run/plugin/own", "has 2 links"}, // its twin is the hard link
		{"unix", "/run/plugin/file", "is not a socket"},
		{"unix", "/run/plugin/fifo", "is not a socket"},
		{"unix", "/run/plugin/sub", "is not a socket"},
	} {
		ws, err := pinWorkerSocket(c.net, c.addr, "/run/plugin", dirFD, dir, me)
		if !errors.Is(err, ErrAddress) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("pin %s %s = %v, want ErrAddress with %q", c.net, c.addr, err, c.want)
		}
		if ws != nil {
			ws.f.Close()
		}
	}
	mustDo(t, os.Remove(filepath.Join(dir, "own-hardlink")))
	if _, err := pinWorkerSocket("unix", "/run/plugin/own", "/run/plugin", dirFD, dir, me+1); !errors.Is(err, ErrAddress) ||
		!strings.Contains(err.Error(), "not the worker's uid") {
		t.Errorf("a socket of another owner: %v", err)
	}
	select {
	case <-hostAccepted:
		t.Fatal("the host socket was connected to")
	default:
	}
}

// A worker that swaps its announced name for a symlink after the pin
// changes nothing: connections go to the pinned inode.
func TestDialGoesToThePinnedSocketAfterASwap(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(t.TempDir(), "host.sock")
	hostAccepted := listenUnix(t, host)
	ownAccepted := listenUnix(t, filepath.Join(dir, "plugin1"))
	s := &Sandbox{cfg: Config{Mode: ModeUnisolated}, hostSocketDir: dir}
	n, a, err := (&pluginRunner{s: s}).PluginToHost("unix", filepath.Join(dir, "plugin1"))
	if err != nil || n != "unix" || !strings.HasPrefix(a, "/proc/self/fd/") {
		t.Fatalf("PluginToHost = %s %s %v", n, a, err)
	}
	mustDo(t, os.Symlink(host, filepath.Join(dir, "swap")))
	mustDo(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, "swap"), unix.AT_FDCWD, filepath.Join(dir, "plugin1"), unix.RENAME_EXCHANGE))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, dial := range []func() (net.Conn, error){
		func() (net.Conn, error) { return s.dialWorker(ctx, "") },
		func() (net.Conn, error) { return net.Dial("unix", a) }, // go-plugin's own dialer (net/rpc)
	} {
		c, err := dial()
		if err != nil {
			t.Fatalf("dial the pinned socket: %v", err)
		}
		c.Close()
		select {
		case <-ownAccepted:
		case <-hostAccepted:
			t.Fatal("the dial reached the host socket")
		case <-ctx.Done():
			t.Fatal("the worker's own socket got no connection")
		}
	}
	if _, _, err := (&pluginRunner{s: s}).PluginToHost("unix", filepath.Join(dir, "plugin1")); !errors.Is(err, ErrAddress) {
		t.Errorf("a second announcement: %v, want ErrAddress", err)
	}
	s.closeSocket()
	if _, err := s.dialWorker(ctx, ""); !errors.Is(err, ErrAddress) {
		t.Errorf("dial after teardown: %v, want ErrAddress", err)
	}
	if _, _, err := (&pluginRunner{s: s}).HostToPlugin("unix", filepath.Join(dir, "plugin9")); !errors.Is(err, ErrAddress) {
		t.Errorf("HostToPlugin: %v, want ErrAddress (the broker is not used)", err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
