//go:build !linux

package cert

import "time"

// processCPU is not measured here: BenchmarkCorpus reports no CPU ratios.
func processCPU() time.Duration { return 0 }
