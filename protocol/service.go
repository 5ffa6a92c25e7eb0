package protocol

import (
	"context"
	"path/filepath"
	"strings"
)

// Service is what a worker implements; pluginserver serves it over gRPC.
type Service interface {
	// Describe reports the backend's capabilities and the worker's
	// descriptor. Both are validated before they leave the process.
	Describe(ctx context.Context) (Capabilities, WorkerDescriptor, error)
	// Run runs one attempt. ctx is cancelled when the client sends Cancel
	// (context.Cause is then an *Error with code cancelled) or when the
	// client's call context ends; the glue acknowledges the Cancel itself.
	// A returned error is mapped with AsError, except that a bare context
	// error after cancellation becomes the cancellation's cause. A panic is
	// recovered and reported as internal_error.
	Run(ctx context.Context, req RunRequest) (Result, error)
	// Shutdown prepares the worker to exit (cancel and drain what runs).
	// After it returns nil the glue replies and stops the gRPC server, so
	// pluginserver.Serve returns and the process can exit cleanly.
	Shutdown(ctx context.Context) error
}

// RunRequest is one attempt as the supervisor dispatches it.
type RunRequest struct {
	// JobSpec is the job spec's JSON exactly as admitted. The worker admits
	// it again against its own capabilities: it trusts the bytes, not the
	// supervisor's reading of them.
	JobSpec []byte
	Attempt uint32
	// WorkDir is the absolute path, inside the worker's view of the file
	// system, of the attempt's sandbox directory.
	WorkDir string
}

// MaxWorkDirBytes bounds RunRequest.WorkDir.
const MaxWorkDirBytes = 4096

// Validate checks the request's envelope; the job spec itself is judged by
// Admit.
func (r RunRequest) Validate() error {
	switch {
	case len(r.JobSpec) == 0:
		return Errorf(CodeInvalidJob, "run: empty job spec")
	case len(r.JobSpec) > MaxJobSpecBytes:
		return Errorf(CodeInvalidJob, "run: job spec is %d bytes, at most %d", len(r.JobSpec), MaxJobSpecBytes)
	case r.Attempt == 0:
		return Errorf(CodeInvalidJob, "run: attempts count from 1")
	case len(r.WorkDir) > MaxWorkDirBytes || !filepath.IsAbs(r.WorkDir) ||
		filepath.Clean(r.WorkDir) != r.WorkDir || strings.IndexByte(r.WorkDir, 0) >= 0:
		return Errorf(CodeInvalidJob, "run: work_dir must be a clean absolute path")
	}
	return nil
}
