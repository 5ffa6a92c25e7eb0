package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/internal/loadbench"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// baselineEnv names another build's nox-worker for
// BenchmarkVerifyHostileProcess to run side by side with this one
// (scripts/bench-hostile.sh builds it from an older revision).
const baselineEnv = "NOX_WORKER_BASELINE"

// BenchmarkVerifyHostileProcess is `nox-worker verify` of the 1.1 KB
// nested-result artifact of issue #16 (32 MiB decompressed), measured
// from outside the process: wall time to its exit, CPU time and peak
// resident set of the reaped child (rusage), medians per run. With
// NOX_WORKER_BASELINE set, that binary runs alternately with this one on
// the same file and its figures are reported as old-*; rss-over-honest
// is the peak above that of the same binary verifying an honest
// certificate of the same job. Target: ≤ 50 ms, ≤ 64 MiB.
func BenchmarkVerifyHostileProcess(b *testing.B) {
	dir := b.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		return p
	}
	honest := write("honest.cnxt.zst", hostile.Compress(quoteCertificate(b)))
	type side struct {
		prefix, bin    string
		wall, cpu, rss []float64
		honestRSS      float64
	}
	sides := []*side{{prefix: "", bin: workerBinary(b)}}
	if old := os.Getenv(baselineEnv); old != "" {
		sides = append(sides, &side{prefix: "old-", bin: old})
	}
	for _, s := range sides {
		m := runMeasuredBin(b, s.bin, "verify", honest, "--format", "json")
		if m.exit != exitOK {
			b.Fatalf("%s: the honest certificate: exit %d %+v", s.bin, m.exit, m.env.Error)
		}
		s.honestRSS = float64(m.peakRSS) / (1 << 20)
	}
	for _, c := range []struct {
		name string
		raw  []byte
	}{
		{"nested", hostile.NestedResult(hostile.NestedPairs, defaultBudget)},
		{"nested-claiming-calls", hostile.NestedResultClaimingBudget(hostile.NestedPairs, defaultBudget)},
	} {
		path := write(c.name+".cnxt.zst", hostile.Compress(c.raw))
		b.Run(c.name, func(b *testing.B) {
			for _, s := range sides {
				s.wall, s.cpu, s.rss = nil, nil, nil
			}
			for range b.N {
				for _, s := range sides {
					m := runMeasuredBin(b, s.bin, "verify", path, "--format", "json")
					if m.exit != exitRejected || m.env.Error == nil || m.env.Error.Code != protocol.CodeProofRejected {
						b.Fatalf("%s: exit %d %+v", s.bin, m.exit, m.env.Error)
					}
					s.wall = append(s.wall, ms(m.wall))
					s.cpu = append(s.cpu, ms(m.cpu))
					s.rss = append(s.rss, float64(m.peakRSS)/(1<<20))
				}
			}
			for _, s := range sides {
				b.ReportMetric(loadbench.Median(s.wall), s.prefix+"wall-ms")
				b.ReportMetric(loadbench.Median(s.cpu), s.prefix+"cpu-ms")
				b.ReportMetric(loadbench.Median(s.rss), s.prefix+"peak-rss-MiB")
				b.ReportMetric(loadbench.Median(s.rss)-s.honestRSS, s.prefix+"rss-over-honest-MiB")
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
