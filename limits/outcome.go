package limits

// Outcome is what the cgroups say about an attempt once its worker has been
// reaped. OOMKilled comes from the oom_kill counter compared with its value
// when the group was created, never from the exit status: a SIGKILL can be
// an OOM kill, a deadline kill or an operator's kill.
type Outcome struct {
	OOMKilled bool   `json:"oom_killed"`
	OOMKills  uint64 `json:"oom_kills,string"`

	// PeakMemoryBytes is memory.max_usage_in_bytes (v1) or memory.peak
	// (v2, kernel >= 5.19).
	PeakMemoryBytes uint64 `json:"peak_memory_bytes,string"`

	CPUUsageNanos  uint64 `json:"cpu_usage_ns,string"`
	CPUUserNanos   uint64 `json:"cpu_user_ns,string"`
	CPUSystemNanos uint64 `json:"cpu_system_ns,string"`
	// CPUThrottledPeriods counts cfs periods in which the quota ran out.
	CPUThrottledPeriods uint64 `json:"cpu_throttled_periods,string"`
	CPUThrottledNanos   uint64 `json:"cpu_throttled_ns,string"`

	PidsPeak uint64 `json:"pids_peak,string"`
	// PidsLimitHits counts forks refused by the pids limit (pids.events max).
	PidsLimitHits uint64 `json:"pids_limit_hits,string"`

	// Missing lists statistics this host could not provide (for example
	// memory.peak on kernels before 5.19); their fields are zero.
	Missing []string `json:"missing,omitempty"`
}
