package limits

import "fmt"

// Spec is the set of hard limits of one attempt. A zero field means "no
// limit". On cgroup v1 the memory limit is also written to
// memory.memsw.limit_in_bytes, and on v2 memory.swap.max is set to 0, so
// swap never extends it.
type Spec struct {
	MemoryBytes     int64 `json:"memory_bytes,omitempty,string"`
	Pids            int64 `json:"pids,omitempty,string"`
	CPUQuotaMicros  int64 `json:"cpu_quota_us,omitempty,string"`
	CPUPeriodMicros int64 `json:"cpu_period_us,omitempty,string"`
}

// DefaultCPUPeriodMicros is used when a Spec sets a quota but no period;
// it is the kernel's own default for cfs_period_us.
const DefaultCPUPeriodMicros = 100_000

// Kernel bounds of cpu.cfs_period_us / cpu.max (kernel/sched/core.c).
const (
	minCPUPeriodMicros = 1_000
	maxCPUPeriodMicros = 1_000_000
	minCPUQuotaMicros  = 1_000
)

// IsZero reports whether the spec asks for no hard limit at all.
func (s Spec) IsZero() bool { return s == Spec{} }

// Validate rejects values that no cgroup implementation accepts, so that a
// bad spec fails as invalid input rather than half-way through Create.
func (s Spec) Validate() error {
	switch {
	case s.MemoryBytes < 0:
		return fmt.Errorf("%w: memory_bytes %d is negative", ErrInvalidSpec, s.MemoryBytes)
	case s.Pids < 0:
		return fmt.Errorf("%w: pids %d is negative", ErrInvalidSpec, s.Pids)
	case s.CPUQuotaMicros < 0:
		return fmt.Errorf("%w: cpu_quota_us %d is negative", ErrInvalidSpec, s.CPUQuotaMicros)
	case s.CPUPeriodMicros < 0:
		return fmt.Errorf("%w: cpu_period_us %d is negative", ErrInvalidSpec, s.CPUPeriodMicros)
	case s.CPUQuotaMicros == 0 && s.CPUPeriodMicros != 0:
		return fmt.Errorf("%w: cpu_period_us without cpu_quota_us", ErrInvalidSpec)
	case s.CPUQuotaMicros != 0 && s.CPUQuotaMicros < minCPUQuotaMicros:
		return fmt.Errorf("%w: cpu_quota_us %d below the kernel minimum %d", ErrInvalidSpec, s.CPUQuotaMicros, minCPUQuotaMicros)
	}
	if p := s.CPUPeriodMicros; p != 0 && (p < minCPUPeriodMicros || p > maxCPUPeriodMicros) {
		return fmt.Errorf("%w: cpu_period_us %d outside [%d, %d]", ErrInvalidSpec, p, minCPUPeriodMicros, maxCPUPeriodMicros)
	}
	return nil
}

// cpuPeriod returns the period to write, applying the default.
func (s Spec) cpuPeriod() int64 {
	if s.CPUPeriodMicros == 0 {
		return DefaultCPUPeriodMicros
	}
	return s.CPUPeriodMicros
}
