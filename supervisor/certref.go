package supervisor

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/certstore"
)

// A verify job may name its certificate by reference (JobSpec.ArtifactRef,
// docs/protocol.md §2.3): the bytes are in the home's certificate store
// (certstore, <home>/certificates/<sha256>), put there before the job was
// submitted, and the frozen spec holds only the ref. Admission checks the
// file is there with the ref's size; the worker reads it through a feed
// in its work dir (certfeed.go); the node's own check reads it from the
// store as it verifies it, hashing it (verifyStored). gc removes it with
// the last job that names it (gc.go).

// admitStoredCertificate refuses a ref whose certificate is not stored,
// or is stored with another size, with invalid_job: the job could never
// run. The bytes are checked as they are verified, not here.
func (s *Supervisor) admitStoredCertificate(ref *protocol.CertificateRef) error {
	if ref == nil {
		return nil
	}
	err := s.certs.Check(*ref)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, certstore.ErrMissing):
		return protocol.Errorf(protocol.CodeInvalidJob, "artifact_ref: certificate %s is not in the home's store (%s): store it first (cyber-supervisor submit --artifact FILE does)", ref.Hex(), certstore.DirName)
	case errors.Is(err, certstore.ErrMismatch):
		return protocol.Errorf(protocol.CodeInvalidJob, "artifact_ref: the home's store holds certificate %s with another size than %d bytes", ref.Hex(), ref.Size)
	}
	return protocol.Errorf(protocol.CodeIOError, "artifact_ref: check the stored certificate %s: %v", ref.Hex(), err)
}

// verifySpecCertificate is the node's own verification of a verify job's
// certificate, inline or by reference. It returns the statement, what was
// checked and the certificate's digest.
func (s *Supervisor) verifySpecCertificate(ctx context.Context, spec *protocol.JobSpec, expect cert.Expect) (*cert.Statement, cert.Checked, [32]byte, *protocol.Error) {
	if ref := spec.ArtifactRef; ref != nil {
		st, checked, perr := s.verifyStored(ctx, spec.Profile, *ref, expect, spec.Limits)
		return st, checked, ref.SHA256, perr
	}
	st, checked, perr := s.verifyCertificate(ctx, spec.Profile, spec.Artifact, expect, spec.Limits)
	return st, checked, sha256.Sum256(spec.Artifact), perr
}

// verifyStored verifies the stored certificate ref names, read from its
// file as it is decompressed (never held, as verifyProduced reads a
// produced one), hashed and counted as it is read: bytes other than the
// ref's are proof_rejected, whatever they verify to.
func (s *Supervisor) verifyStored(ctx context.Context, profile string, ref protocol.CertificateRef, expect cert.Expect, lim protocol.Limits) (*cert.Statement, cert.Checked, *protocol.Error) {
	r, err := s.certs.Open(ref)
	switch {
	case errors.Is(err, certstore.ErrMissing), errors.Is(err, certstore.ErrMismatch):
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeProofRejected, "the stored certificate is not the one its reference names: %v", err)
	case err != nil:
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeIOError, "open the stored certificate: %v", err)
	}
	src := &certSource{r: r, h: sha256.New(), copyTo: io.Discard}
	defer src.close()
	st, checked, perr := s.verifyOpened(ctx, profile, func(maxRaw int64) (*certprofile.Certificate, error) {
		return certprofile.OpenReader(profile, src, r.Size(), maxRaw)
	}, expect, lim)
	switch {
	case errors.Is(src.readErr, artifacts.ErrTooLarge):
		// The file grew past its ref's size since admission.
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeProofRejected, "the stored certificate is not the one its reference names: %v", src.readErr)
	case src.readErr != nil:
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeIOError, "read the stored certificate: %v", src.readErr)
	}
	if perr != nil {
		return nil, cert.Checked{}, perr
	}
	// What the decompressor left, if anything, counts too.
	if _, err := io.Copy(io.Discard, src); err != nil {
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeProofRejected, "the stored certificate is not the one its reference names: %v", err)
	}
	if uint64(src.n) != ref.Size || src.sum() != ref.SHA256 {
		return nil, cert.Checked{}, protocol.Errorf(protocol.CodeProofRejected,
			"the stored certificate (%d bytes) is not the one its reference names (%d bytes, sha256 %s)", src.n, ref.Size, ref.Hex())
	}
	return st, checked, nil
}
