package supervisor

import (
	"bytes"
	"crypto/rand"
	"io"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/certstore"
)

// feedRun is an attempt of a verify job by reference to a stored
// certificate of size bytes, its work dir a fresh directory.
func feedRun(t *testing.T, size int) (*attemptRun, *artifacts.Dir, []byte) {
	t.Helper()
	home := t.TempDir()
	certs, err := certstore.Open(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { certs.Close() })
	data := make([]byte, size)
	rand.Read(data)
	ref, err := certs.PutFile(bytes.NewReader(data), uint64(size))
	if err != nil {
		t.Fatal(err)
	}
	work, err := artifacts.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { work.Close() })
	r := &attemptRun{s: &Supervisor{certs: certs}, spec: &protocol.JobSpec{Operation: protocol.OpVerify, ArtifactRef: &ref}, work: work}
	return r, work, data
}

// The feed gives the worker the stored bytes exactly, and Stop ends it
// (artifacts.TestStartFeed tries a reader that never comes and one that
// leaves). Fails before: no feed.
func TestCertificateFeed(t *testing.T) {
	r, work, data := feedRun(t, 5<<20+3)
	if perr := r.openCertificateFeed(); perr != nil {
		t.Fatal(perr)
	}
	in, err := work.OpenFeedReader(protocol.CertificateFeedName, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(in)
	in.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d of %d bytes: %v", len(got), len(data), err)
	}
	r.feed.Stop()
}

// A stored file removed since admission fails the attempt before the
// worker is given the job.
func TestCertificateFeedMissing(t *testing.T) {
	r, _, _ := feedRun(t, 100)
	if err := r.s.certs.Remove(*r.spec.ArtifactRef); err != nil {
		t.Fatal(err)
	}
	perr := r.openCertificateFeed()
	if perr == nil || perr.Code != protocol.CodeProofRejected {
		t.Fatalf("feed of a removed certificate: %v", perr)
	}
}
