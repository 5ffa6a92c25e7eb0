package main

import (
	"context"
	"net"
	"runtime"

	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// Silent workers (issue #26, item 5): each completes go-plugin's
// handshake and then never answers. The job's wall-clock limit must end
// the wait for them, from the launch on: the launcher's describe, the
// start of the run, everything.

func init() {
	// Announces its socket, accepts every connection and never reads
	// or writes a byte on it: not even HTTP/2's settings.
	attacks["silent"] = attack{silent: true}
	// Speaks HTTP/2 and gRPC but answers no call of the worker protocol:
	// Describe and Run wait until the supervisor gives up.
	attacks["mute"] = attack{setup: mute}
}

// holdSilently accepts connections on l and keeps them, unread.
func holdSilently(l net.Listener) error {
	var held []net.Conn
	for {
		c, err := l.Accept()
		if err != nil {
			// held is read nowhere: without this its conns could be
			// collected, and their finalizers would close them.
			runtime.KeepAlive(held)
			return err
		}
		held = append(held, c)
	}
}

func mute(s *pluginserver.Server) {
	for _, m := range []string{workerpb.Worker_Describe_FullMethodName, workerpb.Worker_Run_FullMethodName} {
		// Never returns. A handler that returned when its context ended
		// would answer the call (an error status) at the server's copy of
		// the caller's deadline, which grpc-timeout carries rounded and
		// can fall just before the caller's own: the caller then saw
		// internal_error instead of its deadline (1 run in CI).
		s.Handle(m, 1<<10, func(context.Context, *pluginserver.Stream) { select {} })
	}
}
