package limits

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// nanosPerUserTick converts cpuacct.stat ticks to nanoseconds: that file
// counts in USER_HZ, which is 100 on every Linux architecture.
const nanosPerUserTick = 10_000_000

// Result reads the attempt's statistics. Call it after the worker was
// reaped (normally after Kill): OOMKilled compares the oom_kill counter now
// with its value at Create. After Delete (or Close) it returns the values
// read just before the groups were removed; if that read failed,
// ErrDeleted.
func (g *Group) Result() (Outcome, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		if g.outcome != nil {
			return *g.outcome, nil
		}
		return Outcome{}, fmt.Errorf("limits: result of %s: %w", g.name, ErrDeleted)
	}
	return g.result()
}

// PeakMemory reads the group's memory high-water mark so far: for a
// caller that has what it needs from the worker and tears the group down
// later.
func (g *Group) PeakMemory() (uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		if g.outcome != nil {
			return g.outcome.PeakMemoryBytes, nil
		}
		return 0, fmt.Errorf("limits: peak memory of %s: %w", g.name, ErrDeleted)
	}
	v, err := g.peakMemory()
	if err != nil {
		return 0, fmt.Errorf("limits: peak memory of %s: %w", g.name, err)
	}
	return v, nil
}

// CPUUsage reads the CPU time (user and system) the group's processes
// have used so far: for a caller that reports it with a result it has in
// hand and tears the group down later.
func (g *Group) CPUUsage() (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		if g.outcome != nil {
			return time.Duration(g.outcome.CPUUsageNanos), nil
		}
		return 0, fmt.Errorf("limits: cpu usage of %s: %w", g.name, ErrDeleted)
	}
	var (
		o    Outcome
		miss bool
	)
	switch {
	case !g.m.v2Limits && g.dirs.cpuacct != "":
		v, err := readUint(g.dirs.cpuacct, "cpuacct.usage")
		if err != nil {
			return 0, fmt.Errorf("limits: cpu usage of %s: %w", g.name, err)
		}
		return time.Duration(v), nil
	case g.dirs.v2 != "":
		// cgroup2 core keeps cpu.stat, on hybrid hosts too.
		v2CPU(g.dirs.v2, &o, func(string) { miss = true })
	default:
		miss = true
	}
	if miss {
		return 0, fmt.Errorf("limits: cpu usage of %s: no cpu accounting", g.name)
	}
	return time.Duration(o.CPUUsageNanos), nil
}

// peakMemory reads memory.max_usage_in_bytes on v1, memory.peak on v2
// (kernel >= 5.19). The caller holds g.mu.
func (g *Group) peakMemory() (uint64, error) {
	switch {
	case g.m.v2Limits && g.m.v2Memory:
		return readUint(g.dirs.v2, "memory.peak")
	case !g.m.v2Limits && g.dirs.memory != "":
		return readUint(g.dirs.memory, "memory.max_usage_in_bytes")
	}
	return 0, errors.New("no memory controller")
}

// oomKills reads the oom_kill counter of the group's memory cgroup:
// memory.oom_control on v1 (kernel >= 4.13), memory.events on v2.
func (g *Group) oomKills() (uint64, error) {
	dir, file := g.dirs.memory, "memory.oom_control"
	if g.m.v2Limits {
		if !g.m.v2Memory {
			return 0, fmt.Errorf("limits: no memory controller for %s", g.dirs.v2)
		}
		dir, file = g.dirs.v2, "memory.events"
	}
	if dir == "" {
		return 0, fmt.Errorf("limits: no memory hierarchy for %s", g.name)
	}
	kv, err := readKeyed(dir, file)
	if err != nil {
		return 0, err
	}
	v, ok := kv["oom_kill"]
	if !ok {
		return 0, fmt.Errorf("limits: %s/%s has no oom_kill counter", dir, file)
	}
	return v, nil
}

func (g *Group) result() (Outcome, error) {
	var o Outcome
	miss := func(what string) { o.Missing = append(o.Missing, what) }

	if g.oomBaseOK {
		n, err := g.oomKills()
		if err != nil {
			// The counter decides OOM; without it no honest answer exists.
			if errors.Is(err, os.ErrNotExist) {
				return o, fmt.Errorf("limits: result of %s: %w: %v", g.name, ErrDeleted, err)
			}
			return o, fmt.Errorf("limits: result of %s: %w", g.name, err)
		}
		if n > g.oomBase {
			o.OOMKilled, o.OOMKills = true, n-g.oomBase
		}
	} else {
		miss("oom_kill")
	}

	if g.m.v2Limits {
		g.v2Stats(&o, miss)
	} else {
		g.v1Stats(&o, miss)
	}
	return o, nil
}

func (g *Group) peakStat(o *Outcome, miss func(string)) {
	if v, err := g.peakMemory(); err == nil {
		o.PeakMemoryBytes = v
	} else {
		miss("peak_memory")
	}
}

func (g *Group) v1Stats(o *Outcome, miss func(string)) {
	d := g.dirs
	g.peakStat(o, miss)
	switch {
	case d.cpuacct != "":
		if v, err := readUint(d.cpuacct, "cpuacct.usage"); err == nil {
			o.CPUUsageNanos = v
		} else {
			miss("cpu_usage")
		}
		u, uerr := readUint(d.cpuacct, "cpuacct.usage_user")
		s, serr := readUint(d.cpuacct, "cpuacct.usage_sys")
		if uerr == nil && serr == nil {
			o.CPUUserNanos, o.CPUSystemNanos = u, s
		} else if kv, err := readKeyed(d.cpuacct, "cpuacct.stat"); err == nil {
			o.CPUUserNanos, o.CPUSystemNanos = kv["user"]*nanosPerUserTick, kv["system"]*nanosPerUserTick
		} else {
			miss("cpu_user_system")
		}
	case d.v2 != "":
		// Hybrid without cpuacct: cgroup2 core keeps cpu.stat anyway.
		v2CPU(d.v2, o, miss)
	default:
		miss("cpu_usage")
	}
	if d.cpu != "" {
		if kv, err := readKeyed(d.cpu, "cpu.stat"); err == nil {
			o.CPUThrottledPeriods, o.CPUThrottledNanos = kv["nr_throttled"], kv["throttled_time"]
		} else {
			miss("cpu_throttling")
		}
	}
	pidsStats(d.pids, o, miss)
}

func (g *Group) v2Stats(o *Outcome, miss func(string)) {
	d := g.dirs.v2
	g.peakStat(o, miss)
	v2CPU(d, o, miss)
	if g.m.v2Pids {
		pidsStats(d, o, miss)
	} else {
		miss("pids")
	}
}

func v2CPU(dir string, o *Outcome, miss func(string)) {
	kv, err := readKeyed(dir, "cpu.stat")
	if err != nil {
		miss("cpu_usage")
		return
	}
	o.CPUUsageNanos = kv["usage_usec"] * 1000
	o.CPUUserNanos = kv["user_usec"] * 1000
	o.CPUSystemNanos = kv["system_usec"] * 1000
	o.CPUThrottledPeriods = kv["nr_throttled"]
	o.CPUThrottledNanos = kv["throttled_usec"] * 1000
}

func pidsStats(dir string, o *Outcome, miss func(string)) {
	if dir == "" {
		miss("pids")
		return
	}
	if kv, err := readKeyed(dir, "pids.events"); err == nil {
		o.PidsLimitHits = kv["max"]
	} else {
		miss("pids_limit_hits")
	}
	if v, err := readUint(dir, "pids.peak"); err == nil {
		o.PidsPeak = v
	} else {
		miss("pids_peak") // pids.peak needs kernel >= 6.1
	}
}
