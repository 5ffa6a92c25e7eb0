package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// peerListener accepts only connections from the socket owner's uid or
// root, checked with SO_PEERCRED (the kernel's word, not the client's).
// Others get a 403 and are closed.
type peerListener struct {
	*net.UnixListener
	allowed func(uid uint32) bool
	refused func(uid uint32, pid int32)
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.UnixListener.AcceptUnix()
		if err != nil {
			return nil, err
		}
		cred, err := peerCred(c)
		if err == nil && l.allowed(cred.Uid) {
			return c, nil
		}
		if cred != nil && l.refused != nil {
			l.refused(cred.Uid, cred.Pid)
		}
		go answerAndClose(c, forbiddenReply())
	}
}

// answerAndClose answers a connection the server will not serve with a
// fixed reply. It first reads what the client sends (bounded in size and
// time) so that the client, still writing its request, reads the answer
// instead of a broken pipe.
func answerAndClose(c net.Conn, reply []byte) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 8<<10)
	var got []byte
	for len(got) < len(buf) && !bytes.Contains(got, []byte("\r\n\r\n")) {
		n, err := c.Read(buf[len(got):])
		got = buf[:len(got)+n]
		if err != nil {
			break
		}
	}
	c.Write(reply)
	if uc, ok := c.(*net.UnixConn); ok {
		uc.CloseWrite()
	}
}

// fixedReply is a whole HTTP answer with an error body: the code's status
// and retry hint.
func fixedReply(code protocol.Code, message string) []byte {
	status := code.HTTPStatus()
	body, _ := json.Marshal(ErrorBody{Error: protocol.Errorf(code, "%s", message)})
	return []byte(fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body))
}

// The two refusals are made on first use, not at package initialisation:
// every start of the binary (a one-shot run, a client command) would
// otherwise pay for encoding/json's reflection over the error body
// (~0.07 ms), and only a daemon ever refuses a connection.
var (
	forbiddenReply = sync.OnceValue(func() []byte {
		return fixedReply(protocol.CodeForbidden, "only the supervisor's owner or root may use this socket")
	})
	busyReply = sync.OnceValue(func() []byte {
		return fixedReply(protocol.CodeBusy, "the daemon serves its maximum of connections, all of them busy; try again")
	})
)

func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var (
		cred *unix.Ucred
		cerr error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// listen creates the socket with mode 0600 (umask applied before bind, so
// there is no window with wider permissions) and removes a stale one.
func listen(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(true)
	return ln, nil
}
