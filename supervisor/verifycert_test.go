package supervisor

import (
	"context"
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// TestVerifyCertificateBounds: the supervisor's own verification takes its
// bounds from the job alone. The nested-result artifact is proof_rejected
// under a budget and memory that allow its 32 MiB; a smaller budget or
// memory limit refuses it before decompressing (artifact_too_large); a job
// without a memory limit is bounded by Config.VerifyMemoryBytes; an honest
// certificate whose node table exceeds the memory bound is
// artifact_too_large, and verifies with enough.
func TestVerifyCertificateBounds(t *testing.T) {
	s := &Supervisor{cfg: Config{VerifyMemoryBytes: DefaultVerifyMemoryBytes}}
	ctx := context.Background()
	quote, _ := noun.Parse(hostile.QuoteProgram)
	exp := func(budget uint64) cert.Expect {
		return cert.Expect{Program: noun.AppendTokens(nil, quote), Budget: budget}
	}
	const budget = 1_000_000
	nested := hostile.Compress(hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget))
	for name, c := range map[string]struct {
		lim      protocol.Limits
		verifyMB uint64
		want     protocol.Code
	}{
		"the job allows 32 MiB":      {protocol.Limits{Reductions: budget}, 0, protocol.CodeProofRejected},
		"a budget of 10,000":         {protocol.Limits{Reductions: 10_000}, 0, protocol.CodeArtifactTooLarge},
		"a memory limit of 16 MiB":   {protocol.Limits{Reductions: budget, MemoryBytes: 16 << 20}, 0, protocol.CodeArtifactTooLarge},
		"the operator's 16 MiB":      {protocol.Limits{Reductions: budget}, 16, protocol.CodeArtifactTooLarge},
		"the operator's, overridden": {protocol.Limits{Reductions: budget, MemoryBytes: 64 << 20}, 16, protocol.CodeProofRejected},
	} {
		sup := s
		if c.verifyMB != 0 {
			sup = &Supervisor{cfg: Config{VerifyMemoryBytes: c.verifyMB << 20}}
		}
		e := exp(c.lim.Reductions)
		_, _, perr := sup.verifyCertificate(ctx, protocol.ProfilePublicTrace, nested, e, c.lim)
		if perr == nil || perr.Code != c.want {
			t.Errorf("%s: %v, want %s", name, perr, c.want)
		}
	}

	// An honest certificate with about 270,000 nodes: 16 MiB hold
	// 65,536 of them, 256 MiB all.
	deep, _ := noun.Parse(hostile.DeepBranch())
	run, err := cert.Prove(ctx, deep, []uint64{12}, 1<<30, cert.ProveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	file := hostile.Compress(run.Certificate)
	e := cert.Expect{Program: run.Statement.Program, Inputs: []uint64{12}, Budget: 1 << 30}
	if _, _, perr := s.verifyCertificate(ctx, protocol.ProfilePublicTrace, file, e, protocol.Limits{Reductions: 1 << 30, MemoryBytes: 16 << 20}); perr == nil || perr.Code != protocol.CodeArtifactTooLarge {
		t.Errorf("deep certificate in 16 MiB: %v", perr)
	}
	st, _, perr := s.verifyCertificate(ctx, protocol.ProfilePublicTrace, file, e, protocol.Limits{Reductions: 1 << 30, MemoryBytes: 256 << 20})
	if perr != nil || st.Outputs[0] != hostile.DeepBranchResult {
		t.Errorf("deep certificate in 256 MiB: %v", perr)
	}
}

// TestVerifyCertificateStreamsTheAttack: the supervisor's own check of
// the 1.1 KB nested-result artifact (32 MiB decompressed) and its
// variants decompresses no more than it reads (at most 256 KiB: the
// verifier's window and the decoder's block ahead of it) and allocates at
// most the decoder's 8 MiB window and 8 MiB more (decompressed whole
// first, it allocated a 32 MiB copy).
func TestVerifyCertificateStreamsTheAttack(t *testing.T) {
	s := &Supervisor{cfg: Config{VerifyMemoryBytes: DefaultVerifyMemoryBytes}}
	quote, _ := noun.Parse(hostile.QuoteProgram)
	const budget = 1_000_000
	e := cert.Expect{Program: noun.AppendTokens(nil, quote), Budget: budget}
	for name, raw := range map[string][]byte{
		"nested":                 hostile.NestedResult(hostile.NestedPairs, budget),
		"nested, claiming calls": hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget),
		"pending stack":          hostile.PendingStack(2*hostile.NestedPairs, budget),
	} {
		file := hostile.Compress(raw)
		var perr *protocol.Error
		var before, after runtime.MemStats
		runtime.GC()
		decompressed := artifacts.DecompressedTotal()
		runtime.ReadMemStats(&before)
		_, _, perr = s.verifyCertificate(context.Background(), protocol.ProfilePublicTrace, file, e, protocol.Limits{Reductions: budget})
		runtime.ReadMemStats(&after)
		decompressed = artifacts.DecompressedTotal() - decompressed
		alloc := after.TotalAlloc - before.TotalAlloc
		if perr == nil || perr.Code != protocol.CodeProofRejected {
			t.Fatalf("%s: %v", name, perr)
		}
		if alloc > artifacts.MaxWindow+8<<20 || decompressed > 256<<10 {
			t.Errorf("%s: %d bytes allocated, %d of %d decompressed", name, alloc, decompressed, len(raw))
		}
		t.Logf("%s (%d bytes): %v; %d bytes decompressed, %d allocated", name, len(file), perr, decompressed, alloc)
	}
}

// TestVerifyCertificateWithinTheJobsMemory: the supervisor's own check of
// the digest attacks of issue #26, as a worker that lies about a verify
// job hands them to it, allocates at most the job's memory limit (8 MiB,
// the least a job may ask) at GOMAXPROCS 1, 2 and 16: the dense axis-0
// certificate (2^18 axis-0 steps over 116 nodes, valid, and forged so
// that only its digest check fails) and the shared-operand one (256
// hashes of operands that share a list of 8,192 pairs). Before the
// checks were deduplicated, the axis-0 steps cost 12 bytes each however
// few the nodes; before the digests were shared, every core digested the
// list into a memo of its own.
func TestVerifyCertificateWithinTheJobsMemory(t *testing.T) {
	s := &Supervisor{cfg: Config{VerifyMemoryBytes: DefaultVerifyMemoryBytes}}
	const memory = MinWorkerMemory
	for _, c := range []struct {
		name    string
		program string
		budget  uint64
		raw     []byte
		want    protocol.Code // "" for accepted
	}{
		{"axis zero", hostile.AxisZeroProgram(18), hostile.AxisZeroBudget(18), hostile.AxisZero(18), ""},
		{"axis zero, forged", hostile.AxisZeroProgram(18), hostile.AxisZeroBudget(18), hostile.AxisZeroForged(18), protocol.CodeProofRejected},
		{"shared operand", hostile.SharedOperandProgram(13, 8), hostile.SharedOperandBudget(13, 8), hostile.SharedOperand(13, 8), ""},
	} {
		p, err := noun.Parse(c.program)
		if err != nil {
			t.Fatal(err)
		}
		e := cert.Expect{Program: noun.AppendTokens(nil, p), Budget: c.budget}
		file := hostile.Compress(c.raw)
		for _, procs := range []int{1, 2, 16} {
			var before, after runtime.MemStats
			old := runtime.GOMAXPROCS(procs)
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, _, perr := s.verifyCertificate(context.Background(), protocol.ProfilePublicTrace, file, e, protocol.Limits{Reductions: c.budget, MemoryBytes: memory})
			runtime.ReadMemStats(&after)
			runtime.GOMAXPROCS(old)
			alloc := after.TotalAlloc - before.TotalAlloc
			if c.want == "" && perr != nil || c.want != "" && (perr == nil || perr.Code != c.want) {
				t.Fatalf("%s at GOMAXPROCS %d: %v, want %q", c.name, procs, perr, c.want)
			}
			t.Logf("%s (%d bytes, %d compressed) at GOMAXPROCS %d: %v; %d bytes allocated", c.name, len(c.raw), len(file), procs, perr, alloc)
			if alloc > memory {
				t.Errorf("%s at GOMAXPROCS %d: %d bytes allocated, over the job's %d", c.name, procs, alloc, memory)
			}
		}
	}
}
