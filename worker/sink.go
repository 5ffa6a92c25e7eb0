package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// artifactSink is where a prove writes its compressed certificate: the
// temporary file of its artifact in the work directory (artifacts.Writer,
// published by the atomic rename), or the supervisor's stream when the
// work directory holds one (a jailed worker: its work directory is a
// tmpfs charged to its memory, too small for a long certificate).
type artifactSink interface {
	io.Writer
	// Commit ends the artifact and says what was written.
	Commit() (artifacts.Info, error)
	// Abort discards it (a stream's reader publishes nothing without
	// the result).
	Abort()
}

// openSink opens the stream protocol.ArtifactStreamName when the work
// directory has one, and the artifact's temporary file otherwise. Both
// fail the write that takes the artifact past limit (artifact_too_large).
func openSink(wd *artifacts.Dir, limit int64) (artifactSink, error) {
	f, err := wd.OpenStream(protocol.ArtifactStreamName)
	switch {
	case err == nil:
		return &streamSink{f: f, h: sha256.New(), limit: limit}, nil
	case errors.Is(err, artifacts.ErrNotFound):
		return wd.Create(ArtifactName, limit)
	}
	return nil, err
}

// streamSink writes the artifact into the supervisor's stream. It counts
// and hashes what it writes, for the result; the supervisor counts and
// hashes again, and bounds the stream on its side whatever this does.
type streamSink struct {
	f     *os.File
	h     hash.Hash
	n     int64
	limit int64
	err   error // sticky
}

func (s *streamSink) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if int64(len(p)) > s.limit-s.n {
		s.fail(fmt.Errorf("write %s: more than %d bytes: %w", s.f.Name(), s.limit, artifacts.ErrTooLarge))
		return 0, s.err
	}
	n, err := s.f.Write(p)
	s.n += int64(n)
	s.h.Write(p[:n])
	if err != nil {
		s.fail(fmt.Errorf("write %s: %w", s.f.Name(), err))
		return n, s.err
	}
	return n, nil
}

// Commit closes the stream: its end is the supervisor's end of file.
func (s *streamSink) Commit() (artifacts.Info, error) {
	if s.err != nil {
		return artifacts.Info{}, s.err
	}
	err := s.f.Close()
	if err != nil {
		s.err = fmt.Errorf("close %s: %w", s.f.Name(), err)
		return artifacts.Info{}, s.err
	}
	s.err = artifacts.ErrClosed
	return artifacts.Info{Name: ArtifactName, Size: s.n, SHA256: hex.EncodeToString(s.h.Sum(nil))}, nil
}

func (s *streamSink) Abort() { s.fail(artifacts.ErrClosed) }

func (s *streamSink) fail(err error) {
	if s.err == nil {
		s.err = err
		s.f.Close()
	}
}
