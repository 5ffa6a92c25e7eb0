package supervisor

import (
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// A produced certificate is checked as it is read from the worker's work
// dir, never held whole: its length is bounded by the job's artifact
// limit (up to 64 GiB, disk), not by the supervisor's memory
// (docs/limits.md, "Where the compressed bytes live"). Two passes over
// the file:
//
//  1. its digest, compared with the one the worker reported
//     (proof_rejected on a difference), before anything else is done
//     with it;
//  2. its verification (cert.VerifyFrom through a decompressor reading
//     the file), the same bytes hashed again and copied as they pass into
//     the sandbox that keeps them (keeping): the copy becomes the kept
//     artifact only if the verification passed and the bytes verified
//     are the ones whose digest was reported (a worker that changes the
//     file between the passes is rejected, and what it changed is never
//     kept).
//
// What acceptance holds of it is the decompressor's window (at most
// artifacts.MaxWindow), the verifier's bounded working set and a few
// buffers of 64 KiB, whatever its size.

// certSource reads an artifact's file, hashing what it reads and copying
// it to copyTo (the kept artifact, or io.Discard).
type certSource struct {
	r      *artifacts.Reader
	h      hash.Hash
	n      int64
	copyTo io.Writer
	// readErr is the file's own failure (ErrTooLarge past the limit, an
	// I/O error), copyErr the copy's: both end the read.
	readErr, copyErr error
}

func openCertSource(dir *artifacts.Dir, name string, limit int64, copyTo io.Writer) (*certSource, error) {
	r, err := dir.OpenFile(name, limit)
	if err != nil {
		return nil, err
	}
	return &certSource{r: r, h: sha256.New(), copyTo: copyTo}, nil
}

func (c *certSource) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.h.Write(p[:n])
		c.n += int64(n)
		if _, werr := c.copyTo.Write(p[:n]); werr != nil {
			c.copyErr = werr
			return n, werr
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		c.readErr = err
	}
	return n, err
}

func (c *certSource) sum() (s [32]byte) {
	c.h.Sum(s[:0])
	return s
}

func (c *certSource) close() { c.r.Close() }

// unreadable is the rejection of an artifact the node could not read.
func unreadable(err error, limit uint64) *protocol.Error {
	if errors.Is(err, artifacts.ErrTooLarge) {
		return protocol.Errorf(protocol.CodeArtifactTooLarge, "certificate exceeds %d bytes", limit)
	}
	return protocol.Errorf(protocol.CodeProofRejected, "certificate unreadable: %v", err)
}

// verifyProduced is the acceptance's check of a produced certificate
// (ref, in dir): its size and digest, then its verification for the
// saved job, copied into keep as it is read. It returns the statement,
// what was checked and the certificate's size; keep's copy is left
// uncommitted (the caller commits it once the result is recorded as
// verified, or aborts it).
func (s *Supervisor) verifyProduced(ctx context.Context, profile string, ref *protocol.ArtifactRef, dir *artifacts.Dir, keep *keeping, expect cert.Expect, lim protocol.Limits) (*cert.Statement, cert.Checked, int64, *protocol.Error) {
	limit := lim.ArtifactCap()
	fail := func(perr *protocol.Error) (*cert.Statement, cert.Checked, int64, *protocol.Error) {
		keep.abort()
		return nil, cert.Checked{}, 0, perr
	}
	// Pass 1: the digest.
	src, err := openCertSource(dir, ref.Name, int64(limit), io.Discard)
	if err != nil {
		return fail(unreadable(err, limit))
	}
	_, err = io.Copy(io.Discard, src)
	src.close()
	if err != nil {
		return fail(unreadable(err, limit))
	}
	if src.sum() != ref.SHA256 {
		return fail(protocol.Errorf(protocol.CodeProofRejected, "certificate digest differs from the reported one"))
	}
	// Pass 2: the verification, kept as it is read.
	copyTo, perr := keep.begin(ref.Name, int64(limit))
	if perr != nil {
		return fail(perr)
	}
	src, err = openCertSource(dir, ref.Name, int64(limit), copyTo)
	if err != nil {
		return fail(unreadable(err, limit))
	}
	defer src.close()
	st, checked, perr := s.verifyOpened(ctx, profile, func(maxRaw int64) (*certprofile.Certificate, error) {
		return certprofile.OpenReader(profile, src, src.r.Size(), maxRaw)
	}, expect, lim)
	switch {
	case src.copyErr != nil:
		// The node's failure, whatever the verifier made of it.
		return fail(keep.err)
	case src.readErr != nil:
		return fail(unreadable(src.readErr, limit))
	case perr != nil:
		return fail(perr)
	case src.sum() != ref.SHA256:
		return fail(protocol.Errorf(protocol.CodeProofRejected, "certificate changed while it was verified: its digest differs from the reported one"))
	}
	return st, checked, src.n, nil
}
