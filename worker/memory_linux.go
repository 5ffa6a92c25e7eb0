package worker

import "golang.org/x/sys/unix"

// hostMemory is the host's total memory (fallbackMemory when the kernel
// does not say).
func hostMemory() uint64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return fallbackMemory
	}
	return uint64(si.Totalram) * uint64(max(si.Unit, 1))
}
