package sandbox

import (
	"context"
	"fmt"
	"io"
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

// PluginToHost pins the socket the worker announces (directly in its
// socket directory, a socket it bound itself) and returns a path that
// reaches only that socket; anything else is refused with ErrAddress, so a
// worker cannot steer the supervisor to connect elsewhere.
func (r *pluginRunner) PluginToHost(pluginNet, pluginAddr string) (string, string, error) {
	return r.s.pinSocket(pluginNet, pluginAddr)
}

// HostToPlugin would hand the worker addresses of listeners the host opens
// for go-plugin's broker. The supervisor opens none (the worker protocol
// needs no broker), so every such address is refused rather than mapped.
func (r *pluginRunner) HostToPlugin(hostNet, hostAddr string) (string, string, error) {
	return "", "", fmt.Errorf("%w: %s address %q: the broker is not used", ErrAddress, hostNet, hostAddr)
}
