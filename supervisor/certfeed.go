package supervisor

import (
	"errors"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/certstore"
)

// openCertificateFeed gives the worker of a verify job by reference its
// certificate: a FIFO in the worker's work dir
// (protocol.CertificateFeedName) that the stored file is written into as
// the worker reads it (artifacts.FeedCopy), the reverse of a prove's
// artifactStream. The worker's work dir (a jailed worker's tmpfs,
// charged to its memory) never holds the certificate, only the pipe's
// buffer does; the supervisor writes at most the ref's size (the stored
// file is read through an artifacts.Reader bounded by it), and stops when
// the attempt's run with the worker ends.
func (r *attemptRun) openCertificateFeed() *protocol.Error {
	ref := *r.spec.ArtifactRef
	src, err := r.s.certs.Open(ref)
	switch {
	case errors.Is(err, certstore.ErrMissing), errors.Is(err, certstore.ErrMismatch):
		// Admission found it: someone removed or changed the home's file
		// since. The job cannot run; the node's word on it stands.
		return protocol.Errorf(protocol.CodeProofRejected, "the stored certificate is not the one its reference names: %v", err)
	case err != nil:
		return protocol.Errorf(protocol.CodeIOError, "open the stored certificate: %v", err)
	}
	feed, err := r.work.StartFeed(protocol.CertificateFeedName, src)
	if err != nil {
		src.Close()
		return protocol.Errorf(protocol.CodeIOError, "make the certificate feed: %v", err)
	}
	r.feed = feed
	return nil
}
