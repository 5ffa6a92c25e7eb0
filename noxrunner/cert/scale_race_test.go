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
)
