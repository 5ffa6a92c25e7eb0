package worker

import (
	"errors"
	"fmt"
	"math"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
)

// openWorkDir opens the attempt's work directory through the artifacts
// package, held open by descriptor from the start of the run so that
// swapping a path component afterwards cannot redirect the publication.
// The directory must exist and must not be a symlink; a jailed worker sees
// it at its mount point.
func openWorkDir(path string) (*artifacts.Dir, error) {
	d, err := artifacts.OpenDir(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrWorkDir, path, workDirCause(err))
	}
	return d, nil
}

func workDirCause(err error) string {
	switch {
	case errors.Is(err, artifacts.ErrUnsafePath):
		return "is a symlink"
	case errors.Is(err, artifacts.ErrNotFound):
		return "does not exist or is not a directory"
	}
	return "cannot be opened"
}

// publish publishes the certificate zstd-compressed under ArtifactName:
// temp file, bounded write, fsync, no-replace rename, directory fsync; or
// into the supervisor's stream when the work directory holds one
// (openSink). The compressed size is checked against the job's limit
// before a byte is written (artifacts.ErrTooLarge), an existing name is
// never replaced (artifacts.ErrExists), and on failure nothing is left
// under the name.
func publish(d *artifacts.Dir, certificate []byte, limit uint64) (artifacts.Info, error) {
	lim := int64(min(limit, math.MaxInt64))
	sink, err := openSink(d, lim)
	if err != nil {
		return artifacts.Info{}, err
	}
	if _, err := sink.Write(artifacts.Compress(nil, certificate)); err != nil {
		sink.Abort()
		return artifacts.Info{}, err
	}
	return sink.Commit()
}
