package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// evictingListener closes its first n connections as soon as they are
// accepted, before reading anything: what the daemon at its connection cap
// does to a new connection that has waited longest without a request.
type evictingListener struct {
	net.Listener
	n        int32
	accepted atomic.Int32
}

func (l *evictingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.accepted.Add(1) <= l.n {
			c.Close()
			continue
		}
		return c, nil
	}
}

// TestSubmitRetriedAfterEviction: a submission whose new connection the
// daemon closed before reading it is sent again on a new one (a
// resubmission of the same job is the same job). net/http retries
// neither form of such a close on a fresh connection itself: an EOF (the
// request was handed to the connection first, as here) or "server closed
// idle connection" (the close was seen first, which a test cannot order;
// a storm of slow clients in CI met it, TestClosedBeforeAnswer covers
// its text).
func TestSubmitRetriedAfterEviction(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l := &evictingListener{Listener: ln, n: sendTries - 1}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{}`)
	})}
	go srv.Serve(l)
	defer srv.Close()
	if _, err := NewClient(sock).Submit(context.Background(), []byte(`{}`), 0, nil); err != nil {
		t.Fatalf("submit after %d evictions: %v", sendTries-1, err)
	}
	if got := l.accepted.Load(); got != sendTries {
		t.Fatalf("%d connections, want %d", got, sendTries)
	}
}

// TestClosedBeforeAnswer: the transport's own text for a connection
// closed before its request was written counts, as the errors of a broken
// connection do; an answer that is an error does not.
func TestClosedBeforeAnswer(t *testing.T) {
	for _, err := range []error{
		errors.New("http: server closed idle connection"),
		fmt.Errorf("Post \"http://supervisor/v1/jobs\": %w", errors.New("http: server closed idle connection")),
		// Seen once under load in the full suite: the transport closed its
		// end of an evicted connection under its own read.
		&url.Error{Op: "Post", URL: "http://supervisor/v1/jobs", Err: &net.OpError{Op: "read", Net: "unix", Err: net.ErrClosed}},
	} {
		if !closedBeforeAnswer(err) {
			t.Errorf("%v: not taken for a connection closed before the answer", err)
		}
	}
	if closedBeforeAnswer(errors.New("supervisor answered 503 Service Unavailable")) {
		t.Error("an answer taken for a closed connection")
	}
}
