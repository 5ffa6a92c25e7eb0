package supervisor

import (
	"errors"
	"io"
	"os"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/certstore"
)

// certificateFeed gives the worker of a verify job by reference its
// certificate: a FIFO in the worker's work dir
// (protocol.CertificateFeedName) that the supervisor writes the stored
// file into as the worker reads it, the reverse of a prove's
// artifactStream. The worker's work dir (a jailed worker's tmpfs,
// charged to its memory) never holds the certificate, only the pipe's
// buffer does; the supervisor writes at most the ref's size (the stored
// file is read through an artifacts.Reader bounded by it), holds a
// copy buffer of 32 KiB of it, and stops when the attempt's run with the worker
// ends (end): a worker that never opens the feed, or leaves in the
// middle, holds nothing of the supervisor's.
type certificateFeed struct {
	feed *artifacts.Feed
	src  *artifacts.Reader
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	out     *os.File
	stopped bool
}

// openCertificateFeed makes the feed of the attempt's verify job by
// reference in its work dir and starts writing the stored certificate
// into it once the worker opens it.
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
	feed, err := r.work.MakeFeed(protocol.CertificateFeedName)
	if err != nil {
		src.Close()
		return protocol.Errorf(protocol.CodeIOError, "make the certificate feed: %v", err)
	}
	f := &certificateFeed{feed: feed, src: src, stop: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	r.feed = f
	return nil
}

// run writes the stored certificate into the feed once the worker opened
// it, then closes its end: the worker's end of file. A failure (the
// worker left: EPIPE; end closed the file) only stops the writing: what
// the worker made of a short feed is in its result, and acceptance
// verifies the stored file itself.
func (f *certificateFeed) run() {
	defer close(f.done)
	defer f.src.Close()
	out, err := f.feed.Open(f.stop)
	if err != nil {
		return
	}
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		out.Close()
		return
	}
	f.out = out
	f.mu.Unlock()
	io.Copy(out, f.src)
	out.Close()
}

// end stops the feed (a Write waiting on a full pipe returns) and waits
// for its writer. Safe to call more than once.
func (f *certificateFeed) end() {
	f.once.Do(func() {
		f.mu.Lock()
		f.stopped = true
		if f.out != nil {
			f.out.Close()
		}
		f.mu.Unlock()
		close(f.stop)
		<-f.done
		f.feed.Close()
	})
}
