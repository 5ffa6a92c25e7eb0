//go:build race

package artifacts

// streamSizes under the race detector, which makes zstd ten times
// slower: the frames above the window are left to the plain run (what
// they test is no concurrency).
var streamSizes = []int{0, 1, 255, 1024, 128<<10 + 1, 1 << 20}
