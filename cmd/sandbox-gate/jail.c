// The jail: step by step what buildJail in sandbox/gate/jail_linux.go does.

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>

#include "init.h"

#ifndef SYS_move_mount
#define SYS_move_mount 429 // the same number on every architecture
#endif
#define GATE_MOVE_MOUNT_F_EMPTY_PATH 0x4

static int remount(const char *p, unsigned long flags)
{
	struct statfs sfs;
	if (statfs(p, &sfs) != 0)
		return gate_fail("statfs %s", p);
	static const struct { unsigned long st, ms; } keep[] = {
		{ST_NOSUID, MS_NOSUID}, {ST_NODEV, MS_NODEV}, {ST_NOEXEC, MS_NOEXEC},
		{ST_RDONLY, MS_RDONLY}, {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME},
		{ST_RELATIME, MS_RELATIME},
	};
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
		if (sfs.f_flags & keep[i].st)
			flags |= keep[i].ms;
	if (mount("", p, NULL, MS_REMOUNT | MS_BIND | flags, NULL) != 0)
		return gate_fail("remount %s", p);
	return 0;
}

static int bind(const char *src, const char *dst, unsigned long flags)
{
	if (mount(src, dst, NULL, MS_BIND, NULL) != 0)
		return gate_fail("bind %s", src);
	return remount(dst, flags);
}

static int bind_file(const char *src, const char *dst, unsigned long flags)
{
	int fd = open(dst, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
	if (fd < 0)
		return gate_fail("create mount point %s", dst);
	close(fd);
	return bind(src, dst, flags);
}

static int bind_self_read_only(const char *p)
{
	if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) != 0) {
		if (errno == ENOENT)
			return 0;
		return gate_fail("bind %s", p);
	}
	return remount(p, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

int gate_build_jail(const struct config *c)
{
	static const char *const dirs[] = {"bin", "dev", "proc", "tmp", "work", "run", "run/plugin"};
	static const char *const devices[] = {"null", "zero", "full", "random", "urandom"};
	static const char *const proc_ro[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
	static const char *const proc_masked[] = {"kcore", "keys", "timer_list", "sched_debug",
						  "latency_stats", "kallsyms", "kmsg"};
	char p[4096], q[64], opts[128];

	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return gate_fail("make / private");
	if (mount("tmpfs", c->root, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=64,mode=0755") != 0)
		return gate_fail("mount tmpfs on %s", c->root);
	if (chdir(c->root) != 0)
		return gate_fail("chdir %s", c->root);
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (mkdir(dirs[i], 0755) != 0)
			return gate_fail("mkdir %s", dirs[i]);
	// Relative paths below are inside the new tmpfs (cwd).
	if (bind_file(c->worker, "bin/worker", MS_RDONLY | MS_NOSUID | MS_NODEV) != 0)
		return -1;
	if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=4k,nr_inodes=16,mode=0755") != 0)
		return gate_fail("mount tmpfs on /dev");
	for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
		snprintf(p, sizeof p, "/dev/%s", devices[i]);
		snprintf(q, sizeof q, "dev/%s", devices[i]);
		if (bind_file(p, q, MS_NOSUID | MS_NOEXEC) != 0)
			return -1;
	}
	// subset=pid: the PID namespace's processes only, no global file (Linux
	// 5.8); older kernels get the full proc, masked after the pivot.
	int full_proc = 0;
	if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "subset=pid") != 0) {
		if (errno != EINVAL)
			return gate_fail("mount proc");
		if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
			return gate_fail("mount proc");
		full_proc = 1;
	}
	// noexec: /bin/worker is the one file of the jail that may run.
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%llu,mode=1777",
		 (unsigned long long)c->tmp_bytes, (unsigned long long)c->tmp_inodes);
	if (mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) != 0)
		return gate_fail("mount tmpfs on /tmp");
	// The supervisor's work mount came with its flags; a work dir is bound.
	if (c->work_fd != 0) {
		long r = syscall(SYS_move_mount, c->work_fd, "", AT_FDCWD, "work", GATE_MOVE_MOUNT_F_EMPTY_PATH);
		int saved = errno;
		close(c->work_fd);
		errno = saved;
		if (r != 0)
			return gate_fail("attach work mount (fd %d)", c->work_fd);
	} else if (bind(c->work, "work", MS_NOSUID | MS_NODEV | MS_NOEXEC) != 0) {
		return -1;
	}
	// The worker's socket dir is on no host file system: the supervisor
	// reaches the socket through the worker's root (/proc/PID/root).
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=%llu,mode=0700,uid=%lu,gid=%lu",
		 (unsigned long long)c->sock_bytes, (unsigned long long)c->sock_inodes,
		 (unsigned long)(c->identity ? c->uid : getuid()), (unsigned long)(c->identity ? c->gid : getgid()));
	if (mount("tmpfs", "run/plugin", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) != 0)
		return gate_fail("mount tmpfs on /run/plugin");

	// pivot_root(".", ".") stacks the old root on top of the new one; the
	// detach removes it without needing a directory for it.
	if (syscall(SYS_pivot_root, ".", ".") != 0)
		return gate_fail("pivot_root %s", c->root);
	if (umount2(".", MNT_DETACH) != 0)
		return gate_fail("detach old root");
	if (chdir("/") != 0)
		return gate_fail("chdir /");

	for (size_t i = 0; full_proc && i < sizeof proc_ro / sizeof proc_ro[0]; i++) {
		snprintf(p, sizeof p, "/proc/%s", proc_ro[i]);
		if (bind_self_read_only(p) != 0)
			return -1;
	}
	for (size_t i = 0; full_proc && i < sizeof proc_masked / sizeof proc_masked[0]; i++) {
		snprintf(p, sizeof p, "/proc/%s", proc_masked[i]);
		if (mount("/dev/null", p, NULL, MS_BIND, NULL) != 0 && errno != ENOENT)
			return gate_fail("mask %s", p);
	}
	if (remount("/dev", MS_RDONLY | MS_NOSUID | MS_NOEXEC) != 0)
		return -1;
	if (remount("/", MS_RDONLY | MS_NOSUID | MS_NODEV) != 0)
		return -1;
	if (chdir("/work") != 0)
		return gate_fail("chdir /work");
	return 0;
}
