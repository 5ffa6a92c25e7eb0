package apitypes

import (
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

const particle = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// dashboardFixtures are the dashboard's types (dashboard.go), each field
// set.
func dashboardFixtures() map[string]any {
	series := Series{Start: t0, StepSeconds: 60, Accepted: U64s{3, 0, 7},
		Failures: []CodeSeries{{Code: protocol.CodeMemoryExhausted, Counts: U64s{1, 0, 2}, Total: 3}}}
	latency := Latency{Samples: 120, P50MS: 40, P95MS: 310}
	summary := JobSummary{JobID: "j1", State: lifecycle.Failed, Operation: "prove", Program: particle,
		ErrorCode: protocol.CodeMemoryExhausted, Submitted: t0, Ended: t2, Attempts: 2}
	return map[string]any{
		"Overview": Overview{
			Time: t2, Jobs: []StateCount{{State: lifecycle.Queued, Jobs: 4}, {State: lifecycle.Accepted, Jobs: 96}}, TotalJobs: 100,
			CountedSince: t0, LastHour: series, LastDay: Series{Start: t0, StepSeconds: 3600, Accepted: U64s{10}, Failures: []CodeSeries{}},
			QueueDepth: 4, OldestQueued: t1,
			Latency:    Latencies{WindowSeconds: 3600, WindowSamples: 1000, Admission: latency, Run: latency, Verify: latency},
			SlotsInUse: 1, Slots: 2, Version: "v0.4.0 (3810d40)", Host: "h1", Boot: "b-7", Started: t0, Store: "bbolt",
			Isolation: "isolated", CgroupMode: "hybrid", Enforced: []string{"reductions", "wall_time", "memory"},
		},
		"StateCount": StateCount{State: lifecycle.Running, Jobs: 2},
		"Series":     series,
		"CodeSeries": series.Failures[0],
		"Latencies":  Latencies{WindowSeconds: 3600, WindowSamples: 1000, Admission: latency, Run: latency, Verify: latency},
		"Latency":    latency,
		"JobQuery": JobQuery{State: lifecycle.Failed, Operation: "prove", Code: protocol.CodeMemoryExhausted, Program: particle,
			Since: t0, Until: t2.Add(time.Hour), Cursor: "AQAAAAAAAAAq3q2-7wAAAAA", Limit: 50},
		"JobPage":    JobPage{Jobs: []JobSummary{summary}, Next: "AQAAAAAAAAAq3q2-7wAAAAA", Scanned: 2000},
		"JobSummary": summary,
		"JobLookup":  JobLookup{JobID: "j1-long-id"},
	}
}
