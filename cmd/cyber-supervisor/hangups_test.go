package main

import (
	"context"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The daemon is told from its arguments wherever the global flags stand,
// and nothing else is taken for it.
func TestIsServe(t *testing.T) {
	for args, want := range map[string]bool{
		"serve":                             true,
		"--home /tmp/h serve --slots 2":     true,
		"--home=/tmp/h --format json serve": true,
		"serve --home /tmp/h":               true,
		"run x.nox":                         false,
		"--home serve run x.nox":            false, // serve is --home's value
		"help serve":                        false,
		"store check":                       false,
		"":                                  false,
	} {
		a := newApp(context.Background(), strings.NewReader(""), io.Discard, io.Discard)
		if got := isServe(newRootCmd(a), strings.Fields(args)); got != want {
			t.Errorf("isServe(%q) = %v, want %v", args, got, want)
		}
	}
}

// A hang-up ends a client's context and leaves the daemon's alone.
func TestHangupsEndClientsOnly(t *testing.T) {
	for _, daemon := range []bool{false, true} {
		a := newApp(context.Background(), strings.NewReader(""), io.Discard, io.Discard)
		hup := make(chan os.Signal, 1)
		ctx, stop := a.onHangups(context.Background(), hup, daemon)
		hup <- syscall.SIGHUP
		if daemon {
			// Two more fit in the one-signal buffer only once the watch
			// has taken the first and come back for the second: it has
			// handled the first by then.
			for range 2 {
				select {
				case hup <- syscall.SIGHUP:
				case <-time.After(time.Minute):
					t.Fatal("the daemon's watch stopped at a hang-up")
				}
			}
			if ctx.Err() != nil {
				t.Fatal("a hang-up ended the daemon's context")
			}
		} else {
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
				t.Fatal("a hang-up did not end a client's context")
			}
		}
		stop()
	}
}
