// Command hostileworker is a worker that attacks the supervisor from
// inside the jail. Tests build it (static, like nox-worker), install it
// under a name "hostile-ATTACK" and launch it through the real launcher in
// place of nox-worker; the attack is chosen by that name, since a jailed
// worker gets only the environment the launcher gives every worker.
//
// Between the attacks it is a real worker: it serves the worker protocol
// with the real worker implementation on a socket it bound itself, so a
// supervisor that refuses the attack and connects where it should gets
// correct answers.
//
// Socket attacks (the handshake announces something the worker did not
// bind, or swaps it; see sandbox/socket_linux.go) aim at the host path
// TargetSocket names relative to the socket dir: a test listens there and
// fails if anything connects. Stream attacks (streams.go) answer
// go-plugin's stdio and broker streams; silent workers (silent.go)
// complete the handshake and never answer.
package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

// TargetSocket is where the socket attacks point, relative to the worker's
// socket directory: when that directory was a bind of <home>/run/
// <plugin-dir>/ (before issue #26), the host resolved it to
// <home>/target.sock. Tests listen there; the supervisor must refuse the
// attacks before it resolves anything.
const TargetSocket = "../../target.sock"

// attack is one hostile behaviour. announce prepares the socket directory
// and returns the path the handshake names; nil announces the honest
// socket.
type attack struct {
	announce func(dir, honest string) (string, error)
	// before runs at the start of every Run, in the work dir; hold makes
	// Run wait for its cancellation instead of doing the job.
	before func(workDir string)
	hold   bool
	// holdOp makes Run hold jobs of that operation only (and do the
	// others), so one test can keep a worker's attack in place while
	// another job runs.
	holdOp protocol.Operation
	// setup adds its own answers to the server (streams.go, silent.go);
	// silent serves nothing at all once announced.
	setup  func(*pluginserver.Server)
	silent bool
}

var attacks = map[string]attack{
	"honest": {},
	// A symlink to a host socket, announced as the worker's socket.
	"socket-symlink": {announce: func(dir, _ string) (string, error) {
		p := filepath.Join(dir, "plugin-symlink")
		return p, os.Symlink(TargetSocket, p)
	}},
	// A second name of the worker's own socket: harmless here, but a
	// hard link is how a visible foreign socket would be passed off.
	"socket-hardlink": {announce: func(dir, honest string) (string, error) {
		p := filepath.Join(dir, "plugin-hardlink")
		return p, os.Link(honest, p)
	}},
	// The honest socket, announced while the name flips between it and
	// a symlink to the host socket, to win a check-then-connect race.
	"socket-swap": {announce: announceSwapping},
	// Files no worker may leave: setuid, devices, FIFOs, links, sockets,
	// xattrs; then the job is done honestly (its sandbox is kept).
	"plant": {before: plant},
	// The same, then the worker waits to be inspected from the host.
	"plant-hold": {before: func(dir string) { plant(dir); readCgroup() }, hold: true},
	// Writes until the work dir is full, then does the job.
	"fill": {before: fill},
	// Fills its work dir with files, then writes into the supervisor's
	// certificate stream without end, then never finishes the job.
	"stream-flood": {before: func(dir string) { fill(dir); floodStream(dir) }, hold: true},
	// Writes a prefix into the certificate stream and keeps it open for
	// good, then does the job honestly (the real certificate follows the
	// prefix in the stream).
	"stream-prefix": {before: prefixStream},
	// Calls what the seccomp allowlist refuses, reads its cgroups, then
	// does the job.
	"syscalls": {before: func(string) { callDenied(); readCgroup() }},
	// Fills its socket dir (bytes, then inodes); holds an execute job,
	// does any other.
	"fill-socketdir": {before: func(string) { fillSocketDir() }, holdOp: protocol.OpExecute},
}

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "hostile-")
	a, ok := attacks[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "hostileworker: unknown attack %q\n", name)
		os.Exit(2)
	}
	if err := serve(a); err != nil {
		fmt.Fprintln(os.Stderr, "hostileworker:", err)
		os.Exit(1)
	}
}

// serve is pluginserver.Serve with the announcement in the attack's hands.
func serve(a attack) error {
	if os.Getenv(protocol.PluginCookieKey) != protocol.PluginCookieValue {
		return fmt.Errorf("not started as a plugin")
	}
	real, err := worker.New(worker.Config{
		WorkerID: os.Getenv(protocol.EnvWorkerID),
		DeviceID: os.Getenv(protocol.EnvWorkerDeviceID),
		BootID:   os.Getenv(protocol.EnvWorkerBootID),
		WorkRoot: os.Getenv(protocol.EnvWorkerWorkRoot),
	})
	if err != nil {
		return err
	}
	var w protocol.Service = real
	if a.before != nil {
		w = &hostileService{Service: real, before: a.before, hold: a.hold, holdOp: a.holdOp}
	}
	dir := os.Getenv("PLUGIN_UNIX_SOCKET_DIR")
	honest := filepath.Join(dir, "plugin-honest")
	l, err := net.Listen("unix", honest)
	if err != nil {
		return err
	}
	addr := honest
	if a.announce != nil {
		if addr, err = a.announce(dir, honest); err != nil {
			return fmt.Errorf("prepare the attack: %w", err)
		}
	}
	fmt.Printf("1|%d|unix|%s|grpc|\n", protocol.PluginProtocolVersion, addr)
	if a.silent {
		return holdSilently(l)
	}
	srv := pluginserver.NewServer(w, 0)
	if a.setup != nil {
		a.setup(srv)
	}
	return srv.Serve(l)
}
