package supervisor

import "testing"

// For the benchmarks of the external test package (supervisor_test),
// which may import the API: the store of n jobs BenchmarkDashboardReads
// fills, and a supervisor on it with the stub launcher.

func FillStoreForBench(b *testing.B, home string, n int) { fillStore(b, home, n) }

func OpenForBench(b *testing.B, home string, n int) *Supervisor {
	s, _ := openStub(b, home, func(c *Config) { c.QueueLimit = n })
	return s
}

func DashboardSizesForBench(b *testing.B) []int { return dashboardSizes(b) }
