package main

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// notifier tells systemd (a unit of Type=notify) how the daemon is:
// READY=1 once its socket answers, STOPPING=1 when it stops, STATUS= a
// line systemctl status shows. It is the sd_notify(3) protocol: one
// datagram of newline-separated assignments on the unix datagram socket
// $NOTIFY_SOCKET names (a path, or "@name" for an abstract socket, which
// Go's net package maps itself). Without $NOTIFY_SOCKET (not started by
// systemd, or not Type=notify) it does nothing.
type notifier struct{ addr string }

// takeNotifySocket reads $NOTIFY_SOCKET and removes it from the
// environment: the workers (and anything else this process starts) must
// not tell systemd about the daemon.
func takeNotifySocket() *notifier {
	addr := os.Getenv("NOTIFY_SOCKET")
	os.Unsetenv("NOTIFY_SOCKET")
	return &notifier{addr: addr}
}

// notify sends the assignments as one datagram.
func (n *notifier) notify(assignments ...string) error {
	if n == nil || n.addr == "" {
		return nil
	}
	if !strings.HasPrefix(n.addr, "/") && !strings.HasPrefix(n.addr, "@") {
		return fmt.Errorf("sd_notify: $NOTIFY_SOCKET %q is neither a path nor an abstract name", n.addr)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify: dial %s: %w", n.addr, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(strings.Join(assignments, "\n") + "\n")); err != nil {
		return fmt.Errorf("sd_notify: write %s: %w", n.addr, err)
	}
	return nil
}
