package sandbox

import (
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/go-plugin/runner"
)

// pluginRunner is the runner.Runner go-plugin drives. It only adapts: the
// lifecycle lives in Sandbox.
type pluginRunner struct {
	s *Sandbox
}

var _ runner.Runner = (*pluginRunner)(nil)

func (r *pluginRunner) Start(ctx context.Context) error { return r.s.start(ctx) }

// Wait blocks until the worker is reaped; go-plugin calls it after both pipes
// reached EOF, so teardown may close them.
func (r *pluginRunner) Wait(ctx context.Context) error {
	_, err := r.s.Wait(ctx)
	return err
}

func (r *pluginRunner) Kill(ctx context.Context) error { return r.s.Kill(ctx) }

func (r *pluginRunner) Stdout() io.ReadCloser {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.s.stdout == nil {
		return io.NopCloser(strings.NewReader(""))
	}
	return r.s.stdout
}

func (r *pluginRunner) Stderr() io.ReadCloser {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.s.stderr == nil {
		return io.NopCloser(strings.NewReader(""))
	}
	return r.s.stderr
}

func (r *pluginRunner) Name() string { return r.s.cfg.WorkerPath }

// ID is empty until the process exists: go-plugin's Kill treats an empty ID
// as "nothing to kill".
func (r *pluginRunner) ID() string {
	if pid := r.s.Pid(); pid != 0 {
		return strconv.Itoa(pid)
	}
	return ""
}

func (r *pluginRunner) Diagnose(context.Context) string { return r.s.diagnose() }

// PluginToHost maps the socket the jailed worker announces (under
// /run/plugin) to the host's socket directory. Anything else is refused: a
// worker must not steer the supervisor to connect elsewhere.
func (r *pluginRunner) PluginToHost(pluginNet, pluginAddr string) (string, string, error) {
	return r.s.translate(pluginNet, pluginAddr, jailSocketDir, r.s.socketDir())
}

// HostToPlugin is the inverse, used for addresses go-plugin hands to the
// worker (the broker).
func (r *pluginRunner) HostToPlugin(hostNet, hostAddr string) (string, string, error) {
	return r.s.translate(hostNet, hostAddr, r.s.socketDir(), jailSocketDir)
}

func (s *Sandbox) socketDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hostSocketDir
}

func (s *Sandbox) translate(network, addr, from, to string) (string, string, error) {
	if s.cfg.Mode != ModeIsolated {
		return network, addr, nil
	}
	if network != "unix" {
		return "", "", fmt.Errorf("%w: %s address %q (only unix sockets cross the jail)", ErrAddress, network, addr)
	}
	if from == "" || !path.IsAbs(addr) {
		return "", "", fmt.Errorf("%w: %q", ErrAddress, addr)
	}
	name, ok := strings.CutPrefix(path.Clean(addr), from+"/")
	if !ok || name == "" || strings.Contains(name, "/") || name == ".." {
		return "", "", fmt.Errorf("%w: %q is not directly in %s", ErrAddress, addr, from)
	}
	return "unix", filepath.Join(to, name), nil
}
