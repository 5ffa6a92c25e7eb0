package supervisor

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// OperatorLimits are the operator's defaults and ceilings of the limits a
// job asks for (Config.Limits; serve and run --default-memory,
// --default-time, --max-memory, --max-time). Zero fields take the
// built-in values (withDefaults), so that no job runs without a memory or
// a time limit on a host that enforces them.
type OperatorLimits struct {
	// DefaultMemory is the memory limit of a job that asks for none,
	// where memory limits are enforced (built-in: half the host's memory
	// divided by the slots).
	DefaultMemory uint64
	// DefaultWallTime is the wall-clock limit of a job that asks for none
	// (built-in: DefaultWallTime).
	DefaultWallTime time.Duration
	// MaxMemory and MaxWallTime refuse a job that asks for more
	// (unsupported_limit, before anything is stored). Built-in: the
	// host's memory, and MaxWallTime.
	MaxMemory   uint64
	MaxWallTime time.Duration
}

// Built-in limits.
const (
	// MinWorkerMemory is the smallest memory limit a job may ask for: what
	// a worker needs to start and answer. Small jobs measured peaks of
	// 1.3-3.3 MB (isolated, cgroup v1 accounting); a limit of 1 MiB killed
	// the worker before it ran, 512 KiB before it could even say so. 8 MiB
	// leaves room for the runtime's start, the gRPC connection and the
	// first collections.
	MinWorkerMemory = 8 << 20
	// DefaultWallTime is the built-in wall-clock limit of a job that asks
	// for none.
	DefaultWallTime = time.Hour
	// MaxWallTime is the built-in ceiling of a job's wall-clock limit.
	MaxWallTime = 7 * 24 * time.Hour
	// fallbackHostMemory stands for the host's memory when
	// /proc/meminfo cannot be read.
	fallbackHostMemory = 4 << 30
)

// withDefaults fills in the built-ins for a supervisor with slots slots
// on a host with hostMemory bytes, and checks the result: defaults within
// the ceilings, nothing below MinWorkerMemory.
func (l OperatorLimits) withDefaults(slots int, hostMemory uint64) (OperatorLimits, error) {
	if l.MaxMemory == 0 {
		l.MaxMemory = max(hostMemory, MinWorkerMemory)
	}
	if l.DefaultMemory == 0 {
		share := hostMemory / 2 / uint64(max(slots, 1))
		share -= share % (1 << 20)
		l.DefaultMemory = min(max(share, MinWorkerMemory), l.MaxMemory)
	}
	if l.MaxWallTime == 0 {
		l.MaxWallTime = MaxWallTime
	}
	if l.DefaultWallTime == 0 {
		l.DefaultWallTime = min(DefaultWallTime, l.MaxWallTime)
	}
	switch {
	case l.DefaultMemory < MinWorkerMemory || l.MaxMemory < MinWorkerMemory:
		return l, fmt.Errorf("%w: memory limits below the %d bytes a worker needs", ErrConfig, MinWorkerMemory)
	case l.DefaultMemory > l.MaxMemory:
		return l, fmt.Errorf("%w: default memory %d above the ceiling %d", ErrConfig, l.DefaultMemory, l.MaxMemory)
	case l.DefaultWallTime%time.Millisecond != 0 || l.MaxWallTime%time.Millisecond != 0 || l.DefaultWallTime <= 0:
		return l, fmt.Errorf("%w: wall-clock limits must be positive whole milliseconds", ErrConfig)
	case l.DefaultWallTime > l.MaxWallTime:
		return l, fmt.Errorf("%w: default wall-clock limit %s above the ceiling %s", ErrConfig, l.DefaultWallTime, l.MaxWallTime)
	}
	return l, nil
}

// apply is a job's limits under the operator's policy: a limit below what
// a worker needs is invalid_job, one above a ceiling unsupported_limit;
// an absent memory limit gets the default where memory is enforced
// (memoryEnforced), an absent wall-clock limit always (a deadline is
// enforced on every host).
func (l OperatorLimits) apply(lim protocol.Limits, memoryEnforced bool) (protocol.Limits, error) {
	maxMS := uint64(l.MaxWallTime.Milliseconds())
	switch {
	case lim.MemoryBytes != 0 && lim.MemoryBytes < MinWorkerMemory:
		return lim, protocol.Errorf(protocol.CodeInvalidJob, "limits.memory_bytes %d is below the %d bytes (8 MiB) a worker needs to start", lim.MemoryBytes, MinWorkerMemory)
	case lim.MemoryBytes > l.MaxMemory:
		return lim, protocol.Errorf(protocol.CodeUnsupportedLimit, "limits.memory_bytes %d is above this supervisor's ceiling of %d bytes (--max-memory)", lim.MemoryBytes, l.MaxMemory)
	case lim.WallTimeMS > maxMS:
		return lim, protocol.Errorf(protocol.CodeUnsupportedLimit, "limits.wall_time_ms %d is above this supervisor's ceiling of %d ms (--max-time)", lim.WallTimeMS, maxMS)
	}
	if lim.MemoryBytes == 0 && memoryEnforced {
		lim.MemoryBytes = l.DefaultMemory
	}
	if lim.WallTimeMS == 0 {
		lim.WallTimeMS = uint64(l.DefaultWallTime.Milliseconds())
	}
	return lim, nil
}

// LimitsReport is the operator limits in force, for `capabilities`: every
// number a decimal string. DefaultMemory applies only where
// MemoryEnforced.
type LimitsReport struct {
	DefaultMemoryBytes uint64 `json:"default_memory_bytes,string"`
	DefaultWallTimeMS  uint64 `json:"default_wall_time_ms,string"`
	MaxMemoryBytes     uint64 `json:"max_memory_bytes,string"`
	MaxWallTimeMS      uint64 `json:"max_wall_time_ms,string"`
	MinMemoryBytes     uint64 `json:"min_memory_bytes,string"`
	MemoryEnforced     bool   `json:"memory_enforced"`
	// DefaultRetries: the retries of a job that asks for none.
	DefaultRetries uint32 `json:"default_retries,string"`
}

// Limits are the operator limits this supervisor admits jobs with.
func (s *Supervisor) Limits() LimitsReport {
	l := s.cfg.Limits
	return LimitsReport{
		DefaultMemoryBytes: l.DefaultMemory, DefaultWallTimeMS: uint64(l.DefaultWallTime.Milliseconds()),
		MaxMemoryBytes: l.MaxMemory, MaxWallTimeMS: uint64(l.MaxWallTime.Milliseconds()),
		MinMemoryBytes: MinWorkerMemory, MemoryEnforced: s.caps.Limits.Memory,
		DefaultRetries: s.cfg.DefaultRetries,
	}
}

// HostMemory is MemTotal of /proc/meminfo, or a fallback of 4 GiB when it
// cannot be read.
func HostMemory() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return fallbackHostMemory
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 3 && string(f[0]) == "MemTotal:" && string(f[2]) == "kB" {
			if kb, err := strconv.ParseUint(string(f[1]), 10, 64); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return fallbackHostMemory
}
