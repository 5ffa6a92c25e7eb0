package worker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// verifyByRef is verify of a certificate named by reference
// (JobSpec.ArtifactRef): it is read from the supervisor's feed in the
// work dir (protocol.CertificateFeedName) as it is decompressed and
// verified, never held, hashed and counted as it is read. It is checked
// exactly as an inline one, and then the bytes read must be the ref's:
// another length or digest is proof_rejected, whatever they verified to.
func (w *Worker) verifyByRef(ctx context.Context, job *protocol.AdmittedJob, dir string) (outcome, error) {
	spec := job.Spec
	ref := *spec.ArtifactRef
	wd, err := openWorkDir(dir)
	if err != nil {
		return outcome{}, err
	}
	defer wd.Close()
	feed, err := wd.OpenFeedReader(protocol.CertificateFeedName, ctx.Done())
	switch {
	case errors.Is(err, artifacts.ErrNotFound):
		return outcome{}, protocol.Errorf(protocol.CodeIOError, "the certificate is named by reference and the work dir has no %s to read it from", protocol.CertificateFeedName)
	case err != nil && ctx.Err() != nil:
		return outcome{}, ctx.Err()
	case err != nil:
		return outcome{}, err
	}
	defer feed.Close()
	// A read that waits for the supervisor ends with the run.
	stop := context.AfterFunc(ctx, func() { feed.Close() })
	defer stop()
	src := &hashingReader{r: feed, h: sha256.New(), limit: ref.Size}
	raw, err := certprofile.OpenReader(spec.Profile, src, int64(ref.Size), w.maxCertificateBytes(spec.Profile, spec.Limits))
	if err != nil {
		return outcome{}, feedError(ctx, err)
	}
	st, checked, err := cert.VerifyFrom(ctx, raw, raw.Size, expectations(job), w.verifyBounds(spec.Limits))
	raw.Close()
	if err != nil {
		return outcome{}, feedError(ctx, err)
	}
	// What the decompressor left (nothing, for a frame that ends where
	// its ref says) is counted and hashed too.
	if _, err := io.Copy(io.Discard, src); err != nil {
		return outcome{}, feedError(ctx, err)
	}
	if src.n != ref.Size || src.sum() != ref.SHA256 {
		return outcome{}, protocol.Errorf(protocol.CodeProofRejected,
			"the certificate read (%d bytes) is not the one its reference names (%d bytes, sha256 %s)", src.n, ref.Size, ref.Hex())
	}
	return verified(st, checked, ref.SHA256), nil
}

// feedError is err, or the run's end when the feed was closed because
// the run ended.
func feedError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var pe *protocol.Error
	if errors.As(err, &pe) || errors.Is(err, cert.ErrMismatch) || errors.Is(err, cert.ErrRejected) ||
		errors.Is(err, cert.ErrTooLarge) || errors.Is(err, artifacts.ErrTooLarge) || errors.Is(err, artifacts.ErrCorrupt) {
		return err
	}
	// The feed broke off (the supervisor stopped writing): the bytes
	// are not the ref's.
	return protocol.Errorf(protocol.CodeProofRejected, "the certificate's feed ended early: %v", err)
}

// hashingReader reads at most limit bytes of r (a byte past them is
// artifacts.ErrTooLarge), hashing and counting them.
type hashingReader struct {
	r     io.Reader
	h     hash.Hash
	n     uint64
	limit uint64
}

func (s *hashingReader) Read(p []byte) (int, error) {
	if s.n == s.limit {
		// One byte more would tell a longer feed from its end.
		var one [1]byte
		n, err := s.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("certificate feed: more than its %d bytes: %w", s.limit, artifacts.ErrTooLarge)
		}
		return 0, err
	}
	if uint64(len(p)) > s.limit-s.n {
		p = p[:s.limit-s.n]
	}
	n, err := s.r.Read(p)
	s.h.Write(p[:n])
	s.n += uint64(n)
	return n, err
}

func (s *hashingReader) sum() (out [32]byte) {
	s.h.Sum(out[:0])
	return out
}
