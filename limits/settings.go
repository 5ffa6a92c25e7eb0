package limits

import "strconv"

// setting is one control-file write.
type setting struct{ file, value string }

// v1Settings are the writes for s in the v1 memory, pids and cpu groups, in
// the order they must happen: the memory limit before memsw (the kernel
// refuses memsw < limit), and the period before the quota.
func v1Settings(s Spec, memsw bool) (memory, pids, cpu []setting) {
	if s.MemoryBytes > 0 {
		v := strconv.FormatInt(s.MemoryBytes, 10)
		memory = append(memory, setting{"memory.limit_in_bytes", v})
		if memsw {
			// Equal to the limit: swap must not extend it.
			memory = append(memory, setting{"memory.memsw.limit_in_bytes", v})
		}
	}
	if s.Pids > 0 {
		pids = append(pids, setting{"pids.max", strconv.FormatInt(s.Pids, 10)})
	}
	if s.CPUQuotaMicros > 0 {
		cpu = append(cpu,
			setting{"cpu.cfs_period_us", strconv.FormatInt(s.cpuPeriod(), 10)},
			setting{"cpu.cfs_quota_us", strconv.FormatInt(s.CPUQuotaMicros, 10)})
	}
	return memory, pids, cpu
}

// v2Settings are the writes for s in a cgroup v2 group. memory says whether
// the memory controller is enabled for it; swapFile whether memory.swap.max
// exists (swap accounting on).
func v2Settings(s Spec, memory, swapFile bool) []setting {
	var out []setting
	if memory {
		// One OOM kill takes the whole attempt: a worker that lost a
		// helper process is not worth keeping alive.
		out = append(out, setting{"memory.oom.group", "1"})
	}
	if s.MemoryBytes > 0 {
		out = append(out, setting{"memory.max", strconv.FormatInt(s.MemoryBytes, 10)})
		if swapFile {
			// v2 limits swap separately; 0 makes the limit the total,
			// like memsw == limit on v1.
			out = append(out, setting{"memory.swap.max", "0"})
		}
	}
	if s.Pids > 0 {
		out = append(out, setting{"pids.max", strconv.FormatInt(s.Pids, 10)})
	}
	if s.CPUQuotaMicros > 0 {
		out = append(out, setting{"cpu.max", strconv.FormatInt(s.CPUQuotaMicros, 10) + " " + strconv.FormatInt(s.cpuPeriod(), 10)})
	}
	return out
}
