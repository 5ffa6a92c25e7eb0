package worker

import (
	"context"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// verifyByRefIn runs the verify job of spin(12) in profile with its
// certificate named by ref, fed through the work dir's feed with the
// bytes fed (what a supervisor writes from its store).
func verifyByRefIn(t *testing.T, w *Worker, profile string, ref protocol.CertificateRef, fed []byte) (protocol.Result, error) {
	t.Helper()
	j := newJob(t, protocol.OpVerify, spinNox(t), []uint64{12}, 1_000_000)
	j.Profile = profile
	j.ArtifactRef = &ref
	dir := t.TempDir()
	wd, err := artifacts.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer wd.Close()
	feed, err := wd.MakeFeed(protocol.CertificateFeedName)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		out, err := feed.Open(stop)
		if err != nil {
			wrote <- err
			return
		}
		// The worker may stop reading early (a refusal): a failed write
		// is its business.
		_, err = out.Write(fed)
		out.Close()
		wrote <- err
	}()
	res, err := w.Run(context.Background(), protocol.RunRequest{JobSpec: j.bytes(t), Attempt: 1, WorkDir: dir})
	close(stop)
	<-wrote
	return res, err
}

// A verify job by reference reads its certificate from the feed as it
// verifies it, and the bytes must be the ref's: the certificate itself is
// accepted and reports the ref's digest; the same bytes under a ref of
// another digest, or cut short, are proof_rejected. Fails before: the
// worker read spec.Artifact, which a job by reference does not have
// ("a verify job needs an artifact" at its admission).
func TestVerifyByReference(t *testing.T) {
	w := newWorker(t, Config{})
	for _, profile := range []string{protocol.ProfilePublicTrace, protocol.ProfilePublicTraceV2} {
		t.Run(profile, func(t *testing.T) {
			j := newJob(t, protocol.OpProve, spinNox(t), []uint64{12}, 1_000_000)
			j.Profile = profile
			_, dir, err := runSpec(t, w, j.bytes(t))
			if err != nil {
				t.Fatal(err)
			}
			b := readFile(t, dir, ArtifactName)
			ref := protocol.CertificateRef{SHA256: sha256.Sum256(b), Size: uint64(len(b))}
			res, err := verifyByRefIn(t, w, profile, ref, b)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verification == nil || res.Verification.ArtifactSHA256 != ref.SHA256 || res.Output[0] != 0 {
				t.Fatalf("result %+v", res)
			}
			other := ref
			other.SHA256[0] ^= 1
			_, err = verifyByRefIn(t, w, profile, other, b)
			wantCode(t, err, protocol.CodeProofRejected, "not the one its reference names")
			_, err = verifyByRefIn(t, w, profile, ref, b[:len(b)-1])
			wantCode(t, err, protocol.CodeProofRejected, "")
		})
	}
}

// Without the supervisor's feed a job by reference has nothing to read.
func TestVerifyByReferenceWithoutFeed(t *testing.T) {
	w := newWorker(t, Config{})
	j := newJob(t, protocol.OpVerify, spinNox(t), []uint64{12}, 1_000_000)
	j.ArtifactRef = &protocol.CertificateRef{Size: 10}
	_, _, err := runSpec(t, w, j.bytes(t))
	wantCode(t, err, protocol.CodeIOError, protocol.CertificateFeedName)
}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	d, err := artifacts.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, err := d.OpenFile(name, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
