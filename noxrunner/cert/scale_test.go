//go:build !race

package cert

// The scale of the deep-noun tests. The race detector makes hemera about
// nine times slower (a digest of a million fresh nodes would take over a
// minute), so a -race run (scripts/test.sh, CI) uses the smaller scale of
// scale_race_test.go with a stack cap small enough that the smaller nouns
// still overflow any walk that recursed once per level.
const (
	deepMin, deepMax = 1_000_000, 10_000_000 // levels of the structural checks
	deepDigested     = 1_000_000             // levels of the digest checks
	deepDoublings    = 15                    // hostile.Levels(15) = 1,081,344
	deepMaxStack     = 16 << 20
	// The digest attacks of TestVerifyMemoryPerNode: 2^axisZeroDoublings
	// axis-0 steps; a list of 2^sharedListDoublings pairs hashed
	// 2^sharedHashDoublings times.
	axisZeroDoublings   = 20
	sharedListDoublings = 15
	sharedHashDoublings = 11
	deepChecks          = 3
	// The forgery test's program (TestV2ForgeryOneLiePerStep): the
	// subjects of its hash chains and tree, a few thousand calls.
	forgeryChain, forgeryTree = "[5 0]", "[4 0]"
	forgeryMinCalls           = 2000
	// TestV2ProverHeldIsBounded's run: 2^18 links of the hash chain, 13.4 M reductions.
	heldV2Chain         = 18
	heldV2MinReductions = 10_000_000
	// ... and its nested loops (1.5 M reductions at 10, 3.1 M at 11,
	// 12.5 M at 13), both past the memo's 2^16 pairs.
	heldV2NestedSmall, heldV2Nested = 10, 13
	// TestV2MemoWorkIsLinear's deep branch (1.5 M reductions).
	memoWorkDeep = 14
	// TestPipelinedCertificatesAreTheSequentials compares the reference
	// cases one in pipelineVectorEvery (every one).
	pipelineVectorEvery = 1
)
