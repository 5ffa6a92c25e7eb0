package api

import (
	"runtime/debug"
	"sort"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// OverviewOf is the dashboard's overview: the supervisor's figures with
// what this host is (its build, its isolation and cgroups, the limits
// its workers' capabilities say it enforces).
func OverviewOf(o *supervisor.Overview, caps protocol.Capabilities, host *launch.HostReport) apitypes.Overview {
	v := apitypes.Overview{
		Time: o.Time, Jobs: make([]apitypes.StateCount, 0, len(lifecycle.States)), CountedSince: o.CountedSince,
		LastHour: SeriesOf(o.LastHour), LastDay: SeriesOf(o.LastDay),
		QueueDepth: uint64(o.QueueDepth), OldestQueued: o.OldestQueued,
		Latency: apitypes.Latencies{
			WindowSeconds: uint64(o.Latency.Window.Seconds()), WindowSamples: uint64(o.Latency.MaxSamples),
			Admission: LatencyOf(o.Latency.Admission), Run: LatencyOf(o.Latency.Run), Verify: LatencyOf(o.Latency.Verify),
		},
		SlotsInUse: uint64(o.SlotsInUse), Slots: uint64(o.Slots),
		Version: buildVersion(), Host: o.Host, Boot: o.Boot, Started: o.Started, Store: o.Store,
		Enforced: enforcedLimits(caps.Limits),
	}
	for _, st := range lifecycle.States {
		v.Jobs = append(v.Jobs, apitypes.StateCount{State: st, Jobs: o.Jobs[st]})
		v.TotalJobs += o.Jobs[st]
	}
	if host != nil {
		v.Isolation = host.Isolation
		if p, ok := host.Probe.(limits.Capabilities); ok {
			v.CgroupMode = p.CgroupMode
		}
	}
	return v
}

// SeriesOf is one series of buckets.
func SeriesOf(s supervisor.Series) apitypes.Series {
	v := apitypes.Series{Start: s.Start, StepSeconds: uint64(s.Step.Seconds()), Accepted: apitypes.U64s(s.Accepted),
		Failures: make([]apitypes.CodeSeries, 0, len(s.Failures))}
	if v.Accepted == nil {
		v.Accepted = apitypes.U64s{}
	}
	for _, f := range s.Failures {
		v.Failures = append(v.Failures, apitypes.CodeSeries{Code: f.Code, Counts: apitypes.U64s(f.Counts), Total: f.Total})
	}
	sort.SliceStable(v.Failures, func(i, j int) bool {
		if v.Failures[i].Total != v.Failures[j].Total {
			return v.Failures[i].Total > v.Failures[j].Total
		}
		return v.Failures[i].Code < v.Failures[j].Code
	})
	return v
}

// LatencyOf is one latency's percentiles, in milliseconds.
func LatencyOf(p supervisor.Percentiles) apitypes.Latency {
	return apitypes.Latency{Samples: uint64(p.Samples), P50MS: uint64(p.P50.Milliseconds()), P95MS: uint64(p.P95.Milliseconds())}
}

// enforcedLimits names the limits that are enforced, in a fixed order.
func enforcedLimits(e protocol.EnforcedLimits) []string {
	out := []string{}
	for _, l := range []struct {
		name string
		on   bool
	}{
		{"reductions", e.Reductions}, {"wall_time", e.WallTime}, {"memory", e.Memory}, {"artifact_bytes", e.ArtifactBytes},
		{"cancellation", e.Cancellation}, {"pids", e.Pids}, {"cpu", e.CPU},
	} {
		if l.on {
			out = append(out, l.name)
		}
	}
	return out
}

// buildVersion is this binary's module version and VCS revision.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			v += " (" + s.Value + ")"
		}
	}
	return v
}

// JobSummaryOf is a job as a row of a list.
func JobSummaryOf(j *store.JobSummary) apitypes.JobSummary {
	v := apitypes.JobSummary{JobID: j.ID, State: j.State, Operation: j.Operation, Program: j.Program,
		ErrorCode: j.ErrorCode, Submitted: j.Created, Attempts: j.Attempts}
	if j.State.Terminal() {
		// A terminal job's last write is its end.
		v.Ended = j.Updated
	}
	return v
}

// JobPageOf is one page of a list.
func JobPageOf(p *supervisor.JobPage) apitypes.JobPage {
	v := apitypes.JobPage{Jobs: make([]apitypes.JobSummary, 0, len(p.Jobs)), Next: p.Next, Scanned: uint64(p.Scanned)}
	for _, j := range p.Jobs {
		v.Jobs = append(v.Jobs, JobSummaryOf(j))
	}
	return v
}
