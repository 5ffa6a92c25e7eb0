package worker

import (
	"context"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// hostileVerifyJob is a verify job of hostile.QuoteProgram under budget
// with the compressed hostile certificate raw.
func hostileVerifyJob(t testing.TB, raw []byte, budget uint64, memory uint64) []byte {
	j := newJob(t, protocol.OpVerify, hostile.QuoteProgram, nil, budget)
	j.Artifact = hostile.Compress(raw)
	j.Limits.MemoryBytes = memory
	return j.bytes(t)
}

// TestHostileArtifactsCostTheirJob: the nested-result attack (1.1 KB,
// 32 MiB decompressed) and its variants are refused by the verify job
// (proof_rejected) having decompressed at most 256 KiB of them (the
// verifier's 64 KiB window and the decoder's block ahead of it) and
// allocated at most the decoder's 8 MiB window and 8 MiB more (before
// streaming: one whole decompressed copy, 33.7-34.7 MB); and its
// decompressed size is bounded by the job: under a budget too small to
// produce 32 MiB, or a memory limit too small to hold it, it is refused
// before anything is decompressed (artifact_too_large).
func TestHostileArtifactsCostTheirJob(t *testing.T) {
	w := newWorker(t, Config{})
	const budget = 1_000_000
	for name, raw := range map[string][]byte{
		"nested":                 hostile.NestedResult(hostile.NestedPairs, budget),
		"nested, claiming calls": hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget),
		"pending stack":          hostile.PendingStack(2*hostile.NestedPairs, budget),
	} {
		spec := hostileVerifyJob(t, raw, budget, 0)
		var err error
		before := artifacts.DecompressedTotal()
		alloc := allocated(func() { _, _, err = runSpec(t, w, spec) })
		decompressed := artifacts.DecompressedTotal() - before
		wantCode(t, err, protocol.CodeProofRejected, "")
		if alloc > artifacts.MaxWindow+8<<20 || decompressed > 256<<10 {
			t.Errorf("%s: verify job allocated %d bytes and decompressed %d of %d", name, alloc, decompressed, len(raw))
		}
		t.Logf("%s: %d-byte artifact of %d bytes: %v; %d bytes decompressed, %d allocated",
			name, len(hostile.Compress(raw)), len(raw), err, decompressed, alloc)
	}
	// The job's budget bounds the decompressed size: 10,000 reductions
	// produce at most cert.MaxEncodedFor(10,000) bytes.
	var err error
	small := hostileVerifyJob(t, hostile.NestedResultClaimingBudget(hostile.NestedPairs, 10_000), 10_000, 0)
	alloc := allocated(func() { _, _, err = runSpec(t, w, small) })
	wantCode(t, err, protocol.CodeArtifactTooLarge, "")
	if alloc > 1<<20 {
		t.Errorf("budget-bound refusal allocated %d bytes", alloc)
	}
	// And the job's memory: 16 MiB cannot hold 32 MiB.
	tight := hostileVerifyJob(t, hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget), budget, 16<<20)
	alloc = allocated(func() { _, _, err = runSpec(t, w, tight) })
	wantCode(t, err, protocol.CodeArtifactTooLarge, "")
	if alloc > 1<<20 {
		t.Errorf("memory-bound refusal allocated %d bytes", alloc)
	}
}

// TestVerifyTableFollowsTheMemoryLimit: a certificate whose node table
// needs more than the job's memory allows (after the process's reserve)
// is artifact_too_large; with the memory it needs, it verifies.
func TestVerifyTableFollowsTheMemoryLimit(t *testing.T) {
	w := newWorker(t, Config{})
	src := hostile.DeepBranch()
	res, file := proveJob(t, w, src, []uint64{12}, 1<<30) // 135,168 levels, ~270,000 nodes
	j := newJob(t, protocol.OpVerify, src, []uint64{12}, 1<<30)
	j.Artifact = file
	j.Limits.MemoryBytes = 40 << 20 // half for data: 20 MiB, ~80,000 nodes
	_, _, err := runSpec(t, w, j.bytes(t))
	wantCode(t, err, protocol.CodeArtifactTooLarge, "node table")
	j.Limits.MemoryBytes = 256 << 20
	if _, _, err := runSpec(t, w, j.bytes(t)); err != nil {
		t.Fatalf("with 256 MiB: %v (certificate of %d bytes)", err, res.Artifact.Size)
	}
}

// BenchmarkHostileArtifact is the verify job of the 1.1 KB nested-result
// artifact and its variants: the frame's declared size within the job's
// bound, the statement against the job, and the refusal at the result's
// first byte, with only what was read decompressed. Target: ≤ 50 ms (the
// old verifier: 7.7 s; decompressing whole: ~30 ms; BenchmarkVerifyArtifact
// has both side by side).
func BenchmarkHostileArtifact(b *testing.B) {
	w := newWorker(b, Config{})
	const budget = 1_000_000
	for _, c := range []struct {
		name string
		raw  []byte
	}{
		{"nested", hostile.NestedResult(hostile.NestedPairs, budget)},
		{"nested-claiming-budget", hostile.NestedResultClaimingBudget(hostile.NestedPairs, budget)},
		{"pending-stack", hostile.PendingStack(2*hostile.NestedPairs, budget)},
	} {
		job, err := protocol.Admit(hostileVerifyJob(b, c.raw, budget, 0), w.admissionCaps())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.verify(context.Background(), job); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
