package supervisor

import (
	"syscall"
	"time"
)

// cpuUse is user+system CPU of this process (the supervisor and the
// benchmark's clients) and of its reaped children (workers, gates): the
// per-job CPU cost is what limits throughput on a small machine, and
// wall-clock rates alone hide which side it comes from.
type cpuUse struct{ self, children time.Duration }

func cpuTimes() cpuUse {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	return cpuUse{rusageCPU(&self), rusageCPU(&kids)}
}

func rusageCPU(r *syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

func (c cpuUse) sub(o cpuUse) cpuUse {
	return cpuUse{c.self - o.self, c.children - o.children}
}
