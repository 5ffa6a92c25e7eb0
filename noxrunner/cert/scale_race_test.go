//go:build race

package cert

// The -race scale of the deep-noun tests (see scale_test.go): a walk that
// recursed once per level would need at least 16 bytes of stack a level,
// more than the 1 MiB cap at 100,000 levels.
const (
	deepMin, deepMax = 100_000, 1_000_000
	deepDigested     = 100_000
	deepDoublings    = 12 // hostile.Levels(12) = 135,168
	deepMaxStack     = 1 << 20
	// The digest attacks of TestVerifyMemoryPerNode: 2^axisZeroDoublings
	// axis-0 steps; a list of 2^sharedListDoublings pairs hashed
	// 2^sharedHashDoublings times.
	axisZeroDoublings   = 16
	sharedListDoublings = 12
	sharedHashDoublings = 8
	deepChecks          = 2
	// The forgery test's program (TestV2ForgeryOneLiePerStep): the
	// subjects of its hash chains and tree, about a thousand calls: the race detector makes the digests nine times slower.
	forgeryChain, forgeryTree = "[4 0]", "[3 0]"
	forgeryMinCalls           = 500
	// TestV2ProverHeldIsBounded's run: 2^14 links, 0.8 M reductions: the race detector makes hemera nine times slower.
	heldV2Chain         = 14
	heldV2MinReductions = 800_000
	// ... and its nested loops (1.5 M reductions at 10, 3.1 M at 11,
	// 12.5 M at 13), both past the memo's 2^16 pairs.
	heldV2NestedSmall, heldV2Nested = 10, 11
	// TestV2MemoWorkIsLinear's deep branch (0.38 M reductions).
	memoWorkDeep = 12
	// TestPipelinedCertificatesAreTheSequentials compares the reference
	// cases one in pipelineVectorEvery (every fourth: the race detector makes the 3,000 cases, proved twice, take 15 s).
	pipelineVectorEvery = 4
)
