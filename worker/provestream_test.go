package worker

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// spinNox is the corpus's spin loop (noxrunner/cert/testdata/corpus):
// input 12 runs 98,290 reductions with output 0.
func spinNox(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "noxrunner", "cert", "testdata", "corpus", "spin.nox"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// proveIn proves spin(12) in profile on w and returns the result and the
// artifact's bytes.
func proveIn(t *testing.T, w *Worker, profile string, limits protocol.Limits) (protocol.Result, []byte, error) {
	t.Helper()
	j := newJob(t, protocol.OpProve, spinNox(t), []uint64{12}, 1_000_000)
	j.Profile = profile
	j.Limits.ArtifactBytes = limits.ArtifactBytes
	j.Limits.MemoryBytes = limits.MemoryBytes
	res, dir, err := runSpec(t, w, j.bytes(t))
	if err != nil {
		if names := dirNames(t, dir); len(names) != 0 {
			t.Fatalf("a failed prove left %v in its work dir", names)
		}
		return res, nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, ArtifactName))
	if err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{ArtifactName}) {
		t.Fatalf("work dir holds %v", names)
	}
	return res, b, nil
}

// verifyIn runs the verify job of spin(12) in profile on the artifact.
func verifyIn(t *testing.T, w *Worker, profile string, artifact []byte) (protocol.Result, error) {
	t.Helper()
	j := newJob(t, protocol.OpVerify, spinNox(t), []uint64{12}, 1_000_000)
	j.Profile = profile
	j.Artifact = artifact
	res, _, err := runSpec(t, w, j.bytes(t))
	return res, err
}

// TestProveStreamedV2: a v2 prove job streams its certificate into the
// artifact file (one zstd frame that, for a run this long, cannot declare
// its size), its result is that of the v1 job of the same run, and the
// v2 verify job accepts it; each profile's verify job refuses the other's
// certificate (claim_mismatch: no profile stands in for another), and v1
// still proves and verifies. Fails before: the worker offered v1 only
// (unsupported_profile).
func TestProveStreamedV2(t *testing.T) {
	w := newWorker(t, Config{})
	res2, cert2, err := proveIn(t, w, protocol.ProfilePublicTraceV2, protocol.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	res1, cert1, err := proveIn(t, w, protocol.ProfilePublicTrace, protocol.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Profile != protocol.ProfilePublicTraceV2 || res2.Reductions != 98290 || !slices.Equal(res2.Output, []uint64{0}) ||
		res2.Reductions != res1.Reductions || res2.Artifact.Size != uint64(len(cert2)) {
		t.Fatalf("v2 result %+v, v1 %+v", res2, res1)
	}
	t.Logf("spin(12), 98,290 reductions: v2 %d bytes, v1 %d bytes compressed", len(cert2), len(cert1))
	for _, c := range []struct {
		profile string
		cert    []byte
	}{{protocol.ProfilePublicTraceV2, cert2}, {protocol.ProfilePublicTrace, cert1}} {
		got, err := verifyIn(t, w, c.profile, c.cert)
		if err != nil {
			t.Fatalf("verify %s: %v", c.profile, err)
		}
		if got.Reductions != 98290 || got.Profile != c.profile {
			t.Fatalf("verify %s: %+v", c.profile, got)
		}
	}
	_, err = verifyIn(t, w, protocol.ProfilePublicTrace, cert2)
	wantCode(t, err, protocol.CodeClaimMismatch, "another profile")
	_, err = verifyIn(t, w, protocol.ProfilePublicTraceV2, cert1)
	wantCode(t, err, protocol.CodeClaimMismatch, "another profile")
	// A v2 certificate small enough to declare its size still goes to
	// v1's verify as a certificate of another profile.
	small := artifacts.Compress(nil, append([]byte("CYNXTRC2"), bytes.Repeat([]byte{0}, 100)...))
	_, err = verifyIn(t, w, protocol.ProfilePublicTrace, small)
	wantCode(t, err, protocol.CodeClaimMismatch, "another profile")
	if p, err := certprofile.Detect(cert2); err != nil || p != protocol.ProfilePublicTraceV2 {
		t.Fatalf("CertificateProfile of v2: %q, %v", p, err)
	}
	if p, err := certprofile.Detect(cert1); err != nil || p != protocol.ProfilePublicTrace {
		t.Fatalf("CertificateProfile of v1: %q, %v", p, err)
	}
}

// TestProveStreamedFrame: a v2 certificate longer than the compressor's
// first block (spin(14), 393,202 reductions) is one zstd frame that does
// not declare its size, within the stream window, and verifies.
func TestProveStreamedFrame(t *testing.T) {
	w := newWorker(t, Config{})
	j := newJob(t, protocol.OpProve, spinNox(t), []uint64{14}, 1_000_000)
	j.Profile = protocol.ProfilePublicTraceV2
	res, dir, err := runSpec(t, w, j.bytes(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ArtifactName))
	if err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(b); err != nil || h.HasFCS || h.WindowSize > artifacts.StreamWindow || !h.HasCheckSum {
		t.Fatalf("v2 frame header %+v, %v", h, err)
	}
	j.Operation, j.Artifact = protocol.OpVerify, b
	got, _, err := runSpec(t, w, j.bytes(t))
	if err != nil || got.Reductions != res.Reductions || res.Reductions != 393202 {
		t.Fatalf("verify: %+v, %v", got, err)
	}
	// v1 requires a declared size: the frame is refused before its
	// content is read.
	j.Profile = protocol.ProfilePublicTrace
	_, _, err = runSpec(t, w, j.bytes(t))
	wantCode(t, err, protocol.CodeProofRejected, "")
}

// TestProveStreamedArtifactLimit: the compressed certificate is bounded
// by the job's artifact limit as it is written: a limit below it is
// artifact_too_large, with nothing left in the work dir (not the
// artifact, not its temporary file); the same limit with room proves.
func TestProveStreamedArtifactLimit(t *testing.T) {
	w := newWorker(t, Config{})
	_, full, err := proveIn(t, w, protocol.ProfilePublicTraceV2, protocol.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = proveIn(t, w, protocol.ProfilePublicTraceV2, protocol.Limits{ArtifactBytes: uint64(len(full) - 1)})
	wantCode(t, err, protocol.CodeArtifactTooLarge, "")
	if _, _, err := proveIn(t, w, protocol.ProfilePublicTraceV2, protocol.Limits{ArtifactBytes: uint64(len(full))}); err != nil {
		t.Fatalf("at exactly its size: %v", err)
	}
}

// TestProveStreamedBeyondV1Bound: v2's uncompressed bound follows from
// the budget, not from the worker's v1 bound (MaxCertificateBytes) or the
// job's memory: a worker whose v1 bound is 16 KiB refuses the v1
// certificate of spin(12) (tens of KB uncompressed) and proves and
// verifies its v2 one, which is as long. Fails before: there was no v2 path.
func TestProveStreamedBeyondV1Bound(t *testing.T) {
	w := newWorker(t, Config{MaxCertificateBytes: 16 << 10})
	_, _, err := proveIn(t, w, protocol.ProfilePublicTrace, protocol.Limits{})
	wantCode(t, err, protocol.CodeArtifactTooLarge, "")
	_, cert2, err := proveIn(t, w, protocol.ProfilePublicTraceV2, protocol.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := artifacts.NewStreamDecompressor(cert2, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(d)
	if err != nil || len(raw) <= 16<<10 {
		t.Fatalf("v2 certificate of %d bytes (%v): not beyond the v1 bound", len(raw), err)
	}
	if _, err := verifyIn(t, w, protocol.ProfilePublicTraceV2, cert2); err != nil {
		t.Fatal(err)
	}
}

// TestOfferedProfiles: a job gets exactly the profile it names or a
// refusal: a worker configured to offer v1 only refuses a v2 job with
// unsupported_profile (and the other way round); the configuration
// takes only this project's profiles, each once.
func TestOfferedProfiles(t *testing.T) {
	for _, c := range []struct{ offer, ask string }{
		{protocol.ProfilePublicTrace, protocol.ProfilePublicTraceV2},
		{protocol.ProfilePublicTraceV2, protocol.ProfilePublicTrace},
	} {
		w := newWorker(t, Config{Profiles: []string{c.offer}})
		_, _, err := proveIn(t, w, c.ask, protocol.Limits{})
		wantCode(t, err, protocol.CodeUnsupportedProfile, c.ask)
		if _, _, err := proveIn(t, w, c.offer, protocol.Limits{}); err != nil {
			t.Fatalf("offering %s: %v", c.offer, err)
		}
	}
	for _, bad := range [][]string{{}, {protocol.ProfileNone}, {protocol.ProfilePublicTrace, protocol.ProfilePublicTrace}, {"cyber-nox-public-trace-v3"}} {
		if _, err := New(Config{Profiles: bad}); err == nil {
			t.Errorf("profiles %q were taken", bad)
		}
	}
}
