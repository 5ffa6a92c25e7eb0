package artifacts

import (
	"fmt"
	"runtime"
)

// RemoveJob removes every attempt directory of job and the job's
// directory (retention of an ended job). A job without a directory is
// nothing to do. Like RemoveAll it never follows a symlink and never
// leaves the root's file system.
func (r *Root) RemoveJob(job string) error {
	defer runtime.KeepAlive(r.f)
	if !ValidName(job) {
		return fmt.Errorf("artifacts: remove job %q: %w", job, ErrUnsafePath)
	}
	return r.removeJob(job, nil)
}
