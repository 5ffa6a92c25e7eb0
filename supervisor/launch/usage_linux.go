package launch

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// ticksPerSecond is USER_HZ, the unit of /proc/PID/stat's CPU times: 100
// on every Linux architecture.
const ticksPerSecond = 100

// processCPU is the user and system time of a live process from
// /proc/PID/stat (0 when it cannot be read): the CPU time of a worker
// that runs without a cgroup, which cannot fork (nox-worker does not), so
// its own time is the attempt's.
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, uerr := strconv.ParseUint(string(f[11]), 10, 64)
	st, serr := strconv.ParseUint(string(f[12]), 10, 64)
	if uerr != nil || serr != nil {
		return 0
	}
	return time.Duration(ut+st) * time.Second / ticksPerSecond
}
