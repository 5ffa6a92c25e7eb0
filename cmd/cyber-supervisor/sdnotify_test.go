package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Under systemd's Type=notify the daemon says READY=1 (with a STATUS=
// line) on $NOTIFY_SOCKET once its API socket answers, logs one ready
// line, and says STOPPING=1 when it stops; a path and an abstract socket
// both. A real unixgram socket and the real binary. Fails before the
// notifier: no datagram ever comes (the read's bound ends the test).
func TestServeNotifiesSystemd(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		t.Run(fmt.Sprintf("abstract=%v", abstract), func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "notify")
			if abstract {
				name = fmt.Sprintf("@cyber-supervisor-test-%d-%d", os.Getpid(), time.Now().UnixNano())
			}
			conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			home := t.TempDir()
			d := startServe(t, []string{"NOTIFY_SOCKET=" + name}, "--home", home, "serve", "--isolation", "off", "--slots", "1", "--log-format", "json")
			read := func() string {
				t.Helper()
				// A bound for a daemon that never says anything, not a
				// measure of how fast it starts.
				conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
				buf := make([]byte, 4096)
				n, err := conn.Read(buf)
				if err != nil {
					t.Fatalf("no datagram on NOTIFY_SOCKET: %v\n%s", err, d.log.String())
				}
				return string(buf[:n])
			}
			msg := read()
			if !strings.Contains(msg, "READY=1\n") || !strings.Contains(msg, "STATUS=serving on "+filepath.Join(home, "supervisor.sock")+": 1 slots, workers unisolated\n") {
				t.Fatalf("first datagram %q", msg)
			}
			// Ready means the socket answers, at once.
			if r := cli(t, "--home", home, "capabilities"); r.code != 0 {
				t.Fatalf("capabilities right after READY=1: %+v", r)
			}
			// The log reaches the test through a pipe, the datagram
			// directly: wait for the line rather than expect it there.
			ready := d.ready(t)
			for _, k := range []string{"socket", "slots", "isolation"} {
				if ready[k] == nil {
					t.Errorf("the ready line has no %s: %v", k, ready)
				}
			}
			if code := d.stop(t); code != 0 {
				t.Fatalf("serve exited %d:\n%s", code, d.log.String())
			}
			// Stopped: all of its log is in.
			if n := strings.Count(d.log.String(), `"msg":"supervisor ready"`); n != 1 {
				t.Errorf("%d ready lines, want 1:\n%s", n, d.log.String())
			}
			if msg := read(); !strings.Contains(msg, "STOPPING=1\n") {
				t.Errorf("datagram at the stop %q", msg)
			}
		})
	}
}

// A daemon not started by systemd (no $NOTIFY_SOCKET) or given a bad one
// still serves: telling systemd is never a reason to fail.
func TestServeWithBadNotifySocket(t *testing.T) {
	home := t.TempDir()
	d := startServe(t, []string{"NOTIFY_SOCKET=" + filepath.Join(t.TempDir(), "nobody-listens")}, "--home", home, "serve", "--isolation", "off", "--slots", "1", "--log-format", "json")
	d.ready(t)
	if r := cli(t, "--home", home, "capabilities"); r.code != 0 {
		t.Fatalf("capabilities: %+v", r)
	}
	if code := d.stop(t); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, d.log.String())
	}
	// Stopped: all of its log is in.
	if !strings.Contains(d.log.String(), "tell systemd") {
		t.Errorf("the failed notification is not logged:\n%s", d.log.String())
	}
}
