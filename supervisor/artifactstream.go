package supervisor

import (
	"context"
	"errors"
	"math"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// artifactStream takes a jailed worker's certificate out of its jail as
// the worker writes it (docs/design/jailed-artifacts-on-disk.md): the
// worker writes into a FIFO in its work dir (protocol.ArtifactStreamName,
// made and read by the supervisor), and the supervisor writes what it
// reads into the temporary file of the artifact in the attempt's sandbox
// on its own disk, bounded by the job's artifact limit as it reads. So
// the certificate costs the worker's memory cgroup only the pipe's
// buffer, whatever its length, and the disk the sandbox is on at most the
// limit. The artifact is published (renamed to its name) only once the
// worker reported its result; a stream that passes the limit kills the
// worker at once and ends the attempt artifact_too_large, its temporary
// file removed.
type artifactStream struct {
	in    *artifacts.StreamReader
	file  *artifacts.Writer
	limit int64
	done  chan struct{}
	err   error // set before done is closed: nil at the stream's end
}

// openArtifactStream makes the stream of a prove attempt whose worker has
// a work dir of its own (r.work, its tmpfs) and starts collecting it into
// the attempt's sandbox. kill ends the worker (the stream passed the
// limit).
func (r *attemptRun) openArtifactStream(kill func()) *protocol.Error {
	limit := int64(min(r.spec.Limits.ArtifactCap(), math.MaxInt64))
	keep, err := r.sb.open()
	if err != nil {
		return protocol.Errorf(protocol.CodeIOError, "create sandbox: %v", err)
	}
	file, err := keep.Create(protocol.StreamedArtifactName, limit)
	if err != nil {
		return protocol.Errorf(protocol.CodeIOError, "create the artifact in the sandbox: %v", err)
	}
	in, err := r.work.MakeStream(protocol.ArtifactStreamName)
	if err != nil {
		file.Abort()
		return protocol.Errorf(protocol.CodeIOError, "make the artifact stream: %v", err)
	}
	st := &artifactStream{in: in, file: file, limit: limit, done: make(chan struct{})}
	go st.collect(kill)
	r.stream = st
	return nil
}

// collect copies the stream into the file until the worker closes it.
// Writer.ReadFrom reads at most one byte past the limit; that byte is
// the worker's last.
func (st *artifactStream) collect(kill func()) {
	_, err := st.file.ReadFrom(st.in)
	st.in.Close() // the worker's next write fails (EPIPE)
	st.err = err
	close(st.done)
	if errors.Is(err, artifacts.ErrTooLarge) {
		// Decided: the worker is not left to run to its deadline.
		kill()
	}
}

// end decides the attempt's artifact once the worker's result or failure
// is in hand; gone is closed once the worker is (a worker that never
// closes the stream, or never opens it, cannot hold the attempt: what is
// left in the pipe then is the rest). A stream that passed the limit
// fails the attempt artifact_too_large, whatever the worker reported; a
// result with a certificate publishes what came through the stream (the
// digest is checked by acceptance, against the bytes on disk); anything
// else discards it. It reports where acceptance reads the certificate.
func (st *artifactStream) end(ctx context.Context, out *outcome, gone <-chan struct{}, keep *artifacts.Dir) *artifacts.Dir {
	wantIt := out.result != nil && out.result.Artifact != nil
	if !wantIt {
		st.in.Close()
	}
	select {
	case <-st.done:
	case <-gone:
		st.in.Drain()
		<-st.done
	case <-ctx.Done():
		st.in.Close()
		<-st.done
		if st.err == nil {
			st.err = ctx.Err()
		}
	}
	switch {
	case errors.Is(st.err, artifacts.ErrTooLarge):
		out.result, out.state = nil, lifecycle.Failed
		out.err = protocol.Errorf(protocol.CodeArtifactTooLarge,
			"the worker's certificate stream passed the artifact limit of %d bytes", st.limit)
		return nil
	case !wantIt:
		st.file.Abort()
		return nil
	case st.err != nil:
		st.file.Abort()
		out.result, out.state = nil, lifecycle.Failed
		out.err = protocol.Errorf(protocol.CodeIOError, "collect the certificate stream: %v", st.err)
		return nil
	}
	if _, err := st.file.Commit(); err != nil {
		out.result, out.state = nil, lifecycle.Failed
		out.err = protocol.Errorf(protocol.CodeIOError, "publish the collected certificate: %v", err)
		return nil
	}
	return keep
}

// discard ends a stream that end never saw (a stage panicked): nothing
// of it is published.
func (st *artifactStream) discard() {
	st.in.Close()
	<-st.done
	st.file.Abort()
}
