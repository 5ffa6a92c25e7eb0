package main

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

// inlineCertificateBytes is the longest certificate verify passes to its
// worker inline, in the job spec, as cyber-supervisor run does
// (protocol.DefaultArtifactBytes, what the spec was made to carry); a
// longer one is named by reference and fed to the worker from its file
// as it is verified (protocol.CertificateFeedName), never held. A var
// only so that tests can send a small certificate by reference.
var inlineCertificateBytes int64 = protocol.DefaultArtifactBytes

// certificateFile is verify's CERT: open, at most the artifact limit,
// and either read whole (inline) or hashed for its reference.
type certificateFile struct {
	f      *os.File
	size   int64
	inline []byte                  // nil when by reference
	ref    protocol.CertificateRef // when by reference
}

// openCertificateFile opens the certificate at path by the rule of every
// file a user names (a regular file, not a symlink; protocol.OpenLocalFile),
// of at most limit bytes.
func openCertificateFile(path string, limit uint64) (*certificateFile, error) {
	f, size, err := protocol.OpenLocalFile("certificate", path, int64(limit), protocol.CodeArtifactTooLarge)
	if err != nil {
		return nil, err
	}
	c := &certificateFile{f: f, size: size}
	// The file may change while it is read: what is read is size bytes,
	// and the worker checks the bytes it is fed against the reference.
	if size <= inlineCertificateBytes {
		c.inline = make([]byte, size)
		_, err = io.ReadFull(f, c.inline)
	} else {
		h := sha256.New()
		_, err = io.Copy(h, io.NewSectionReader(f, 0, size))
		h.Sum(c.ref.SHA256[:0])
		c.ref.Size = uint64(size)
	}
	if err != nil {
		f.Close()
		return nil, protocol.Errorf(protocol.CodeIOError, "certificate %s: read failed", path)
	}
	return c, nil
}

func (c *certificateFile) Close() error { return c.f.Close() }

// profile is the profile the certificate names by its magic.
func (c *certificateFile) profile() (string, error) {
	if c.inline != nil {
		return certprofile.Detect(c.inline)
	}
	return certprofile.DetectReader(io.NewSectionReader(c.f, 0, c.size), c.size)
}

// statement is the certificate's own statement (worker.ReadStatement).
func (c *certificateFile) statement(w *worker.Worker, maxBudget uint64) (*cert.Statement, error) {
	if c.inline != nil {
		return w.ReadStatement(c.inline, maxBudget)
	}
	return w.ReadStatementAt(c.f, c.size, maxBudget)
}

// verify runs spec, a verify job, with the certificate: inline, or by
// reference through a feed in a work directory of its own.
func (c *certificateFile) verify(ctx context.Context, w *worker.Worker, spec protocol.JobSpec) (protocol.Result, error) {
	if c.inline != nil {
		spec.Artifact = c.inline
		return runJob(ctx, w, spec, scratchDir())
	}
	ref := c.ref
	spec.ArtifactRef = &ref
	work, err := os.MkdirTemp("", ".nox-worker-verify-")
	if err != nil {
		return protocol.Result{}, protocol.Errorf(protocol.CodeIOError, "cannot create a work directory for the certificate's feed")
	}
	defer os.RemoveAll(work)
	if work, err = filepath.Abs(work); err != nil {
		return protocol.Result{}, protocol.Errorf(protocol.CodeIOError, "cannot resolve the work directory")
	}
	dir, err := artifacts.OpenDir(work)
	if err != nil {
		return protocol.Result{}, protocol.Errorf(protocol.CodeIOError, "cannot open the work directory %s", work)
	}
	defer dir.Close()
	feed, err := dir.StartFeed(protocol.CertificateFeedName, io.NopCloser(io.NewSectionReader(c.f, 0, c.size)))
	if err != nil {
		return protocol.Result{}, protocol.Errorf(protocol.CodeIOError, "cannot make the certificate's feed in %s", work)
	}
	defer feed.Stop()
	return runJob(ctx, w, spec, work)
}
