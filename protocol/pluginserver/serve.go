package pluginserver

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The environment go-plugin's client sets for a plugin it starts.
const (
	envProtocolVersions = "PLUGIN_PROTOCOL_VERSIONS"
	envSocketDir        = "PLUGIN_UNIX_SOCKET_DIR"
	envSocketGroup      = "PLUGIN_UNIX_SOCKET_GROUP"
	envClientCert       = "PLUGIN_CLIENT_CERT"    // AutoMTLS
	envMultiplex        = "PLUGIN_MULTIPLEX_GRPC" // broker multiplexing
)

// coreProtocolVersion is go-plugin's own protocol version, the handshake
// line's first field.
const coreProtocolVersion = 1

// ErrNotLaunchedAsPlugin: the magic cookie is missing or wrong, so no
// go-plugin client started this process.
var ErrNotLaunchedAsPlugin = errors.New("pluginserver: not started by a plugin client")

// ErrUnsupported: the client asked for a go-plugin feature this server
// does not provide (AutoMTLS, gRPC broker multiplexing).
var ErrUnsupported = errors.New("pluginserver: unsupported plugin client feature")

// Config is what Serve needs from its process.
type Config struct {
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// Stdout receives the handshake line (os.Stdout when nil).
	Stdout io.Writer
	// Stderr receives the explanation of a refused start (os.Stderr when
	// nil).
	Stderr io.Writer
	// ShutdownGrace: see NewServer.
	ShutdownGrace time.Duration
}

// Serve is plugin.Serve for svc: it checks the handshake, listens on a unix
// socket, announces it, and serves until a Shutdown stops the server.
func Serve(svc protocol.Service, cfg Config) error {
	getenv, stdout, stderr := cfg.Getenv, cfg.Stdout, cfg.Stderr
	if getenv == nil {
		getenv = os.Getenv
	}
	if stdout == nil {
		stdout = os.Stdout
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	if getenv(protocol.PluginCookieKey) != protocol.PluginCookieValue {
		fmt.Fprint(stderr, "This binary is a plugin. These are not meant to be executed directly.\n"+
			"Please execute the program that consumes these plugins, which will\n"+
			"load any plugins automatically\n")
		return ErrNotLaunchedAsPlugin
	}
	if getenv(envClientCert) != "" {
		return fmt.Errorf("%w: AutoMTLS (%s is set)", ErrUnsupported, envClientCert)
	}
	if v, _ := strconv.ParseBool(getenv(envMultiplex)); v {
		return fmt.Errorf("%w: gRPC broker multiplexing (%s is set)", ErrUnsupported, envMultiplex)
	}
	version := negotiateVersion(getenv(envProtocolVersions), stderr)
	l, err := listenUnix(getenv(envSocketDir), getenv(envSocketGroup))
	if err != nil {
		return err
	}
	srv := NewServer(svc, cfg.ShutdownGrace)
	if _, err := fmt.Fprintf(stdout, "%d|%d|%s|%s|grpc|\n", coreProtocolVersion, version, l.Addr().Network(), l.Addr()); err != nil {
		_ = l.Close()
		return fmt.Errorf("pluginserver: writing the handshake: %w", err)
	}
	// As plugin.Serve does: an interrupt meant for the host's process
	// group must not end the plugin; the host stops it.
	signal.Ignore(os.Interrupt)
	return srv.Serve(l)
}

// socketNameTries bounds the draws of a socket name (see listenUnix).
const socketNameTries = 10

// negotiateVersion answers the client's list of acceptable versions. There
// is one version here; a client that does not list it is answered anyway and
// reports the mismatch itself, as with go-plugin's server.
func negotiateVersion(list string, stderr io.Writer) int {
	if list != "" {
		for _, s := range strings.Split(list, ",") {
			if _, err := strconv.Atoi(s); err != nil {
				fmt.Fprintf(stderr, "server sent invalid plugin version %q\n", s)
			}
		}
	}
	return protocol.PluginProtocolVersion
}

// listenUnix listens on a fresh socket path in dir (the temporary
// directory when empty), made group-accessible when group is set, as
// go-plugin's server does. go-plugin reserves the name with a temporary
// file that it removes again; binding a random name directly is one file
// made instead of three operations (~0.1 ms before the handshake), and a
// name taken already (EADDRINUSE) draws another.
func listenUnix(dir, group string) (net.Listener, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	var (
		l    net.Listener
		path string
		err  error
	)
	for range socketNameTries {
		path = filepath.Join(dir, "plugin"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		if l, err = net.Listen("unix", path); !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pluginserver: listen %s: %w", path, err)
	}
	if group != "" {
		if err := groupWritable(path, group); err != nil {
			_ = l.Close()
			return nil, err
		}
	}
	return l, nil
}

func groupWritable(path, group string) error {
	gid, err := strconv.Atoi(group)
	if err != nil {
		g, lerr := user.LookupGroup(group)
		if lerr != nil {
			return fmt.Errorf("pluginserver: socket group %q: %w", group, lerr)
		}
		if gid, err = strconv.Atoi(g.Gid); err != nil {
			return fmt.Errorf("pluginserver: socket group %q: gid %q: %w", group, g.Gid, err)
		}
	}
	if err := os.Chown(path, -1, gid); err != nil {
		return fmt.Errorf("pluginserver: chown %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		return fmt.Errorf("pluginserver: chmod %s: %w", path, err)
	}
	return nil
}
