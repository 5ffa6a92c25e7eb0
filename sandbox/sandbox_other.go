//go:build !linux

package sandbox

import (
	"context"
	"os"
	"os/exec"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
)

// Sandbox is Linux-only; elsewhere New fails with ErrUnsupported.
type Sandbox struct{}

func BecomeSubreaper() error       { return ErrUnsupported }
func New(Config) (*Sandbox, error) { return nil, ErrUnsupported }
func (*Sandbox) ClientConfig(*plugin.ClientConfig) (*plugin.ClientConfig, error) {
	return nil, ErrUnsupported
}
func (*Sandbox) RunnerFunc(hclog.Logger, *exec.Cmd, string) (runner.Runner, error) {
	return nil, ErrUnsupported
}
func (*Sandbox) Pid() int                                       { return 0 }
func (*Sandbox) Report() Report                                 { return Report{} }
func (*Sandbox) Done() <-chan struct{}                          { return nil }
func (*Sandbox) Wait(context.Context) (*os.ProcessState, error) { return nil, ErrUnsupported }
func (*Sandbox) Kill(context.Context) error                     { return nil }

func knownSyscall(string) bool { return false }

// WorkFS is Linux-only.
type WorkFS struct{}

func NewWorkFS(int64, uint64, Identity) (*WorkFS, error) { return nil, ErrUnsupported }
func (*WorkFS) Close() error                             { return nil }
