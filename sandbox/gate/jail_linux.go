package gate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Device nodes the Go runtime and ordinary libraries expect. They are bind
// mounts of the host's nodes (mknod is not possible in a user namespace).
var jailDevices = []string{"null", "zero", "full", "random", "urandom"}

// On kernels without proc's subset=pid, procReadOnly are made read-only and
// procMasked hidden behind /dev/null, as container runtimes do: they let a
// process reach kernel-global state that a PID namespace does not scope
// (sysctls, sysrq, kernel memory, keys).
var (
	procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus", "fs"}
	procMasked   = []string{"kcore", "keys", "timer_list", "sched_debug", "latency_stats", "kallsyms", "kmsg"}
)

// buildJail runs in the init's private mount namespace and leaves it with a
// root that contains only:
//
//	/bin/worker   the worker binary, read-only bind
//	/dev/{null,zero,full,random,urandom}
//	/proc         of the new PID namespace, its processes only (subset=pid)
//	/tmp          size-limited tmpfs, nosuid,nodev,noexec
//	/work         the attempt's work dir, read-write, nosuid,nodev,noexec
//	/run/plugin   a tiny tmpfs of the worker's for its socket, nosuid,nodev,noexec
//
// The root itself is a tmpfs remounted read-only; the host's tree is
// detached and unreachable. owner (nil: the init's own ids) owns the
// socket dir.
func buildJail(j *Jail, owner *Identity) error {
	// Nothing we mount may propagate back to the host (or in from it).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	root := j.Root
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64k,nr_inodes=64,mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", root, err)
	}
	for _, d := range []string{"bin", "dev", "proc", "tmp", "work", "run", "run/plugin"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	rel := func(p string) string { return filepath.Join(root, p) }

	if err := bindFile(j.WorkerPath, rel(WorkerPath), unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", rel("dev"), "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=4k,nr_inodes=16,mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs on /dev: %w", err)
	}
	for _, d := range jailDevices {
		if err := bindFile("/dev/"+d, rel("dev/"+d), unix.MS_NOSUID|unix.MS_NOEXEC); err != nil {
			return err
		}
	}
	// subset=pid (Linux 5.8) shows only the processes of the PID namespace:
	// no /proc/sys, kcore, sysrq-trigger or any other global file, so
	// nothing needs masking. Older kernels get the full proc, masked below.
	fullProc := false
	procFlags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := unix.Mount("proc", rel("proc"), "proc", procFlags, "subset=pid"); err != nil {
		if !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("mount proc: %w", err)
		}
		if err := unix.Mount("proc", rel("proc"), "proc", procFlags, ""); err != nil {
			return fmt.Errorf("mount proc: %w", err)
		}
		fullProc = true
	}
	// noexec: /bin/worker is the one file of the jail that may run.
	if err := mountTmpfs(rel("tmp"), j.Tmp, "mode=1777"); err != nil {
		return fmt.Errorf("mount tmpfs on /tmp: %w", err)
	}
	if err := mountWork(j, rel(WorkDir)); err != nil {
		return err
	}
	// The worker's socket dir is on no host file system: the supervisor
	// reaches the socket through the worker's root (/proc/PID/root).
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if owner != nil {
		uid, gid = owner.UID, owner.GID
	}
	if err := mountTmpfs(rel(SocketDir), j.Sockets, fmt.Sprintf("mode=0700,uid=%d,gid=%d", uid, gid)); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", SocketDir, err)
	}

	if err := os.Chdir(root); err != nil {
		return fmt.Errorf("chdir %s: %w", root, err)
	}
	// pivot_root(".", ".") stacks the old root on top of the new one; the
	// detach below then removes it without needing a directory for it.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root %s: %w", root, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}

	if fullProc {
		for _, p := range procReadOnly {
			if err := bindSelfReadOnly("/proc/" + p); err != nil {
				return err
			}
		}
		for _, p := range procMasked {
			if err := unix.Mount("/dev/null", "/proc/"+p, "", unix.MS_BIND, ""); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("mask /proc/%s: %w", p, err)
			}
		}
	}
	if err := remount("/dev", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC); err != nil {
		return err
	}
	if err := remount("/", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV); err != nil {
		return err
	}
	if err := os.Chdir(WorkDir); err != nil {
		return fmt.Errorf("chdir %s: %w", WorkDir, err)
	}
	return nil
}

// mountTmpfs mounts a tmpfs of bound fs (nosuid, nodev, noexec) on dst.
func mountTmpfs(dst string, fs Tmpfs, more string) error {
	opts := "size=" + strconv.FormatUint(fs.Bytes, 10) + ",nr_inodes=" + strconv.FormatUint(fs.Inodes, 10) + "," + more
	return unix.Mount("tmpfs", dst, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts)
}

// mountWork attaches the supervisor's detached work mount (its flags were
// set when it was made) or binds the work dir.
func mountWork(j *Jail, dst string) error {
	if j.WorkMount == 0 {
		return bindDir(j.WorkDir, dst, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC)
	}
	err := unix.MoveMount(j.WorkMount, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH)
	unix.Close(j.WorkMount)
	if err != nil {
		return fmt.Errorf("attach work mount (fd %d): %w", j.WorkMount, err)
	}
	return nil
}

func bindFile(src, dst string, flags uintptr) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return fmt.Errorf("create mount point %s: %w", dst, err)
	}
	f.Close()
	return bind(src, dst, flags)
}

func bindDir(src, dst string, flags uintptr) error { return bind(src, dst, flags) }

func bind(src, dst string, flags uintptr) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	return remount(dst, flags)
}

func bindSelfReadOnly(p string) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("bind %s: %w", p, err)
	}
	return remount(p, unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC)
}

// remount changes the per-mount flags of a bind mount. Flags the kernel has
// locked (those inherited from a more privileged mount namespace, which is
// the case inside a user namespace) must be repeated or the remount fails
// with EPERM, so they are read back and kept.
func remount(p string, flags uintptr) error {
	var sfs unix.Statfs_t
	if err := unix.Statfs(p, &sfs); err != nil {
		return fmt.Errorf("statfs %s: %w", p, err)
	}
	for _, m := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_RDONLY, unix.MS_RDONLY},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(sfs.Flags)&m.st != 0 {
			flags |= m.ms
		}
	}
	if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|flags, ""); err != nil {
		return fmt.Errorf("remount %s: %w", p, err)
	}
	return nil
}
