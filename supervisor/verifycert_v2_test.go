package supervisor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// proveV2 proves the corpus's spin(d) in v2, streamed through a
// Compressor as the worker does, and returns the artifact and the run.
func proveV2(t *testing.T, d uint64) ([]byte, *cert.Run, cert.Expect) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "noxrunner", "cert", "testdata", "corpus", "spin.nox"))
	if err != nil {
		t.Fatal(err)
	}
	prog, err := noun.Parse(strings.TrimSpace(string(src)))
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	zw, err := artifacts.NewCompressor(&file)
	if err != nil {
		t.Fatal(err)
	}
	const budget = 1 << 30
	run, err := cert.ProveTo(context.Background(), zw, prog, []uint64{d}, budget, cert.ProveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return file.Bytes(), run, cert.Expect{Program: noun.AppendTokens(nil, prog), Inputs: []uint64{d}, Budget: budget}
}

// TestVerifyCertificateV2: the supervisor's own check of a v2
// certificate reads it streamed, its size unknown, and bounds it by its
// budget only, not by the job's memory as v1: spin(16)'s certificate
// (1,572,850 reductions, about 1.6 MB uncompressed) verifies under a 1
// MiB memory bound that refuses a v1 certificate of its length; its
// header is checked against the job first (another budget: claim_mismatch,
// before a step is read); a v2
// job's check refuses a v1 certificate and the other way round
// (claim_mismatch: no profile stands in for another). Fails before: the
// supervisor read every certificate as v1 (a declared size, at most the
// job's memory).
func TestVerifyCertificateV2(t *testing.T) {
	s := &Supervisor{cfg: Config{VerifyMemoryBytes: 1 << 20}}
	ctx := context.Background()
	file, run, e := proveV2(t, 16)
	lim := protocol.Limits{Reductions: e.Budget}
	st, _, perr := s.verifyCertificate(ctx, protocol.ProfilePublicTraceV2, file, e, lim)
	if perr != nil || st.Reductions != run.Statement.Reductions || st.Reductions != 1572850 {
		t.Fatalf("v2 under 1 MiB: %v (%+v)", perr, st)
	}
	v1, err := cert.Prove(ctx, mustParse(t, e.Program), e.Inputs, e.Budget, cert.ProveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v1.Certificate) <= 1<<20 {
		t.Fatalf("the v1 certificate is only %d bytes", len(v1.Certificate))
	}
	v1file := artifacts.Compress(nil, v1.Certificate)
	if _, _, perr := s.verifyCertificate(ctx, protocol.ProfilePublicTrace, v1file, e, lim); perr == nil || perr.Code != protocol.CodeArtifactTooLarge {
		t.Fatalf("v1 under 1 MiB: %v", perr)
	}
	small := e
	small.Budget = 10_000
	if _, _, perr := s.verifyCertificate(ctx, protocol.ProfilePublicTraceV2, file, small, protocol.Limits{Reductions: small.Budget}); perr == nil || perr.Code != protocol.CodeClaimMismatch {
		t.Fatalf("v2 under a budget of 10,000: %v", perr)
	}
	big := &Supervisor{cfg: Config{VerifyMemoryBytes: DefaultVerifyMemoryBytes}}
	if _, _, perr := big.verifyCertificate(ctx, protocol.ProfilePublicTraceV2, v1file, e, lim); perr == nil || perr.Code != protocol.CodeClaimMismatch {
		t.Fatalf("a v1 certificate in a v2 job: %v", perr)
	}
	if _, _, perr := big.verifyCertificate(ctx, protocol.ProfilePublicTrace, file, e, lim); perr == nil || perr.Code != protocol.CodeProofRejected {
		t.Fatalf("a v2 certificate without a declared size in a v1 job: %v", perr)
	}
}

func mustParse(t *testing.T, tokens []byte) noun.Noun {
	t.Helper()
	f, _, err := noun.DecodeTokens(tokens, protocol.MaxFormulaNodes, protocol.MaxFormulaDepth)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
