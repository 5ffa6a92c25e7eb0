// The C gated init. It runs from an ELF constructor, before the Go runtime
// of this binary starts, and either execs the worker or exits: a gated
// launch never pays for a Go runtime start here (about 2 ms of CPU and
// 250 page faults on the machines this was measured on).
//
// It reads the same wire as package sandbox/gate (gate.Magic, the record
// tags in codec.go) and performs the same steps in the same order; the
// sandbox tests run against both. Everything it applies was decided by
// the supervisor: it only parses, mounts, and loads.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"

#define MAX_CONFIG (1 << 20)
#define MAX_LIST 4096

enum {
	TAG_PATH = 1, TAG_ARG, TAG_ENV, TAG_HOSTNAME, TAG_RLIMIT,
	TAG_JAIL_ROOT, TAG_JAIL_WORKER, TAG_JAIL_WORK, TAG_JAIL_SOCKETS, TAG_JAIL_TMPFS,
	TAG_HARDEN, TAG_LANDLOCK, TAG_LANDLOCK_RULE, TAG_SECCOMP,
};

struct rlim { uint32_t resource; uint64_t value; };
struct llrule { uint64_t access; const char *path; };
struct prog { uint16_t len; struct sock_filter *insns; };

struct config {
	const char *path, *hostname;
	uint32_t path_len;
	char *args[MAX_LIST + 1], *env[MAX_LIST + 1];
	int nargs, nenv;
	struct rlim rlimits[16];
	int nrlimits;
	int jail_seen;
	const char *root, *worker, *work, *sockets;
	uint64_t tmpfs;
	int harden;
	int landlock;
	uint32_t abi;
	uint64_t ll_fs, ll_net, ll_scoped;
	struct llrule rules[64];
	int nrules;
	struct prog progs[8];
	int nprogs;
};

static int gate_fd = -1;
static char err_buf[1024];

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

// fail records the first error: "step: strerror" like the Go init's %w.
static int fail(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err_buf, sizeof err_buf, fmt, ap);
	va_end(ap);
	if (saved != 0 && n > 0 && (size_t)n < sizeof err_buf)
		snprintf(err_buf + n, sizeof err_buf - n, ": %s", strerror(saved));
	return -1;
}

static int fail_plain(const char *msg)
{
	errno = 0;
	return fail("%s", msg);
}

// write_all writes the whole buffer or reports failure.
static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

// json_string appends s as a JSON string literal.
static size_t json_string(char *out, size_t cap, size_t at, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	if (at < cap)
		out[at] = '"';
	at++;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[7];
		size_t n = 0;
		if (c == '"' || c == '\\') {
			esc[n++] = '\\';
			esc[n++] = (char)c;
		} else if (c < 0x20) {
			esc[n++] = '\\';
			esc[n++] = 'u';
			esc[n++] = '0';
			esc[n++] = '0';
			esc[n++] = hex[c >> 4];
			esc[n++] = hex[c & 15];
		} else {
			esc[n++] = (char)c;
		}
		for (size_t i = 0; i < n; i++, at++)
			if (at < cap)
				out[at] = esc[i];
	}
	if (at < cap)
		out[at] = '"';
	return at + 1;
}

static void report_error(void)
{
	char out[2200];
	size_t at = (size_t)snprintf(out, sizeof out, "{\"error\":");
	at = json_string(out, sizeof out - 2, at, err_buf);
	if (at > sizeof out - 2)
		at = sizeof out - 2;
	out[at++] = '}';
	write_all(gate_fd, out, at);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

// parse decodes the records in place: every string is NUL-terminated by
// overwriting the next record's tag byte after it has been read, so the
// buffer has one spare byte at the end.
static int parse(unsigned char *b, size_t n, struct config *c)
{
	static const char magic[] = "CSGATE2\n";
	if (n < sizeof magic - 1 || memcmp(b, magic, sizeof magic - 1) != 0)
		return fail_plain("gate: bad config: no \"CSGATE2\" header (another wire version?)");
	size_t at = sizeof magic - 1;
	while (at < n) {
		if (n - at < 5)
			return fail_plain("gate: bad config: truncated record header");
		unsigned tag = b[at];
		uint32_t len = le32(b + at + 1);
		at += 5;
		if ((size_t)len > n - at)
			return fail_plain("gate: bad config: record overruns the config");
		unsigned char *v = b + at;
		at += len;
		int is_string = tag == TAG_PATH || tag == TAG_ARG || tag == TAG_ENV || tag == TAG_HOSTNAME ||
				(tag >= TAG_JAIL_ROOT && tag <= TAG_JAIL_SOCKETS);
		if (is_string && memchr(v, 0, len) != NULL)
			return fail_plain("gate: bad config: NUL in a string");
		if (tag >= TAG_JAIL_ROOT && tag <= TAG_JAIL_TMPFS) {
			int bit = 1 << (tag - TAG_JAIL_ROOT);
			if (c->jail_seen & bit)
				return fail_plain("gate: bad config: jail record twice");
			c->jail_seen |= bit;
		}
		// Strings are terminated by terminate() once every header is read.
		char *s = (char *)v;
		switch (tag) {
		case TAG_PATH:
			if (c->path)
				return fail_plain("gate: bad config: two program paths");
			c->path = s;
			c->path_len = len;
			break;
		case TAG_ARG:
			if (c->nargs == MAX_LIST)
				return fail_plain("gate: bad config: too many arguments");
			c->args[c->nargs++] = s;
			break;
		case TAG_ENV:
			if (c->nenv == MAX_LIST)
				return fail_plain("gate: bad config: too many environment entries");
			c->env[c->nenv++] = s;
			break;
		case TAG_HOSTNAME:
			c->hostname = s;
			break;
		case TAG_RLIMIT:
			if (len != 12 || c->nrlimits == 16)
				return fail_plain("gate: bad config: bad rlimit record");
			c->rlimits[c->nrlimits].resource = le32(v);
			c->rlimits[c->nrlimits].value = le64(v + 4);
			c->nrlimits++;
			break;
		case TAG_JAIL_ROOT:
			c->root = s;
			break;
		case TAG_JAIL_WORKER:
			c->worker = s;
			break;
		case TAG_JAIL_WORK:
			c->work = s;
			break;
		case TAG_JAIL_SOCKETS:
			c->sockets = s;
			break;
		case TAG_JAIL_TMPFS:
			if (len != 8)
				return fail_plain("gate: bad config: bad tmpfs record");
			c->tmpfs = le64(v);
			break;
		case TAG_HARDEN:
			if (len != 0)
				return fail_plain("gate: bad config: bad harden record");
			c->harden = 1;
			break;
		case TAG_LANDLOCK:
			if (len != 28 || c->landlock)
				return fail_plain("gate: bad config: bad Landlock ruleset record");
			c->landlock = 1;
			c->abi = le32(v);
			c->ll_fs = le64(v + 4);
			c->ll_net = le64(v + 12);
			c->ll_scoped = le64(v + 20);
			break;
		case TAG_LANDLOCK_RULE:
			if (!c->landlock || len < 9 || c->nrules == 64)
				return fail_plain("gate: bad config: bad Landlock rule record");
			if (memchr(v + 8, 0, len - 8) != NULL)
				return fail_plain("gate: bad config: NUL in a string");
			c->rules[c->nrules].access = le64(v);
			c->rules[c->nrules].path = (const char *)(v + 8);
			c->nrules++;
			break;
		case TAG_SECCOMP:
			if (len == 0 || len % 8 != 0 || len > 8 * 4096 || c->nprogs == 8)
				return fail_plain("gate: bad config: bad seccomp record");
			c->progs[c->nprogs].len = (uint16_t)(len / 8);
			c->progs[c->nprogs].insns = (struct sock_filter *)v;
			c->nprogs++;
			break;
		default:
			return fail_plain("gate: bad config: unknown record");
		}
	}
	if (c->jail_seen != 0 && c->jail_seen != 0x1f)
		return fail_plain("gate: bad config: incomplete jail");
	if (c->path == NULL || c->path_len == 0 || c->nargs == 0)
		return fail_plain("gate: bad config: no program");
	return 0;
}

// terminate NUL-terminates every string in place. It runs after parse,
// which has read every header, so overwriting the byte after each value
// (the next tag, or the spare byte) loses nothing.
static void terminate(unsigned char *b, size_t n)
{
	size_t at = 8;
	while (at < n) {
		uint32_t len = le32(b + at + 1);
		at += 5 + len;
		b[at] = 0;
	}
}

// The instructions arrive little endian; struct sock_filter is native.
// This init is built for little-endian Linux only (see gate_cgo.go).

static int remount(const char *p, unsigned long flags)
{
	struct statfs sfs;
	if (statfs(p, &sfs) != 0)
		return fail("statfs %s", p);
	static const struct { unsigned long st, ms; } keep[] = {
		{ST_NOSUID, MS_NOSUID}, {ST_NODEV, MS_NODEV}, {ST_NOEXEC, MS_NOEXEC},
		{ST_RDONLY, MS_RDONLY}, {ST_NOATIME, MS_NOATIME}, {ST_NODIRATIME, MS_NODIRATIME},
		{ST_RELATIME, MS_RELATIME},
	};
	for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
		if (sfs.f_flags & keep[i].st)
			flags |= keep[i].ms;
	if (mount("", p, NULL, MS_REMOUNT | MS_BIND | flags, NULL) != 0)
		return fail("remount %s", p);
	return 0;
}

static int bind(const char *src, const char *dst, unsigned long flags)
{
	if (mount(src, dst, NULL, MS_BIND, NULL) != 0)
		return fail("bind %s", src);
	return remount(dst, flags);
}

static int bind_file(const char *src, const char *dst, unsigned long flags)
{
	int fd = open(dst, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
	if (fd < 0)
		return fail("create mount point %s", dst);
	close(fd);
	return bind(src, dst, flags);
}

static int bind_self_read_only(const char *p)
{
	if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) != 0) {
		if (errno == ENOENT)
			return 0;
		return fail("bind %s", p);
	}
	return remount(p, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

// build_jail mirrors buildJail in sandbox/gate/jail_linux.go step by step.
static int build_jail(const struct config *c)
{
	static const char *const dirs[] = {"bin", "dev", "proc", "tmp", "work", "run", "run/plugin"};
	static const char *const devices[] = {"null", "zero", "full", "random", "urandom"};
	static const char *const proc_ro[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
	static const char *const proc_masked[] = {"kcore", "keys", "timer_list", "sched_debug",
						  "latency_stats", "kallsyms", "kmsg"};
	char p[4096], q[64], opts[64];

	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return fail("make / private");
	if (mount("tmpfs", c->root, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,nr_inodes=64,mode=0755") != 0)
		return fail("mount tmpfs on %s", c->root);
	if (chdir(c->root) != 0)
		return fail("chdir %s", c->root);
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (mkdir(dirs[i], 0755) != 0)
			return fail("mkdir %s", dirs[i]);
	// Relative paths below are inside the new tmpfs (cwd).
	if (bind_file(c->worker, "bin/worker", MS_RDONLY | MS_NOSUID | MS_NODEV) != 0)
		return -1;
	if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=4k,nr_inodes=16,mode=0755") != 0)
		return fail("mount tmpfs on /dev");
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
			return fail("mount proc");
		if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
			return fail("mount proc");
		full_proc = 1;
	}
	snprintf(opts, sizeof opts, "size=%llu,mode=1777", (unsigned long long)c->tmpfs);
	if (mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
		return fail("mount tmpfs on /tmp");
	if (bind(c->work, "work", MS_NOSUID | MS_NODEV) != 0)
		return -1;
	if (bind(c->sockets, "run/plugin", MS_NOSUID | MS_NODEV | MS_NOEXEC) != 0)
		return -1;

	// pivot_root(".", ".") stacks the old root on top of the new one; the
	// detach removes it without needing a directory for it.
	if (syscall(SYS_pivot_root, ".", ".") != 0)
		return fail("pivot_root %s", c->root);
	if (umount2(".", MNT_DETACH) != 0)
		return fail("detach old root");
	if (chdir("/") != 0)
		return fail("chdir /");

	for (size_t i = 0; full_proc && i < sizeof proc_ro / sizeof proc_ro[0]; i++) {
		snprintf(p, sizeof p, "/proc/%s", proc_ro[i]);
		if (bind_self_read_only(p) != 0)
			return -1;
	}
	for (size_t i = 0; full_proc && i < sizeof proc_masked / sizeof proc_masked[0]; i++) {
		snprintf(p, sizeof p, "/proc/%s", proc_masked[i]);
		if (mount("/dev/null", p, NULL, MS_BIND, NULL) != 0 && errno != ENOENT)
			return fail("mask %s", p);
	}
	if (remount("/dev", MS_RDONLY | MS_NOSUID | MS_NOEXEC) != 0)
		return -1;
	if (remount("/", MS_RDONLY | MS_NOSUID | MS_NODEV) != 0)
		return -1;
	if (chdir("/work") != 0)
		return fail("chdir /work");
	return 0;
}

static int drop_capabilities(void)
{
	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
			if (errno == EINVAL)
				break; // past the kernel's last capability
			return fail("prctl(PR_CAPBSET_DROP, %d)", cap);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return fail("prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) != 0)
		return fail("capset");
	return 0;
}

// struct landlock_ruleset_attr up to ABI 7 and struct
// landlock_path_beneath_attr (packed in the uapi header).
struct ll_ruleset_attr { uint64_t fs, net, scoped; };
struct __attribute__((packed)) ll_path_beneath { uint64_t allowed; int32_t parent_fd; };

static int apply_landlock(const struct config *c)
{
	struct ll_ruleset_attr attr = {c->ll_fs, c->ll_net, c->ll_scoped};
	size_t size = sizeof attr;
	if (c->abi < 4)
		size = 8;
	else if (c->abi < 6)
		size = 16;
	long ruleset = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ruleset < 0)
		return fail("landlock: create ruleset (ABI %u)", c->abi);
	for (int i = 0; i < c->nrules; i++) {
		int pfd = open(c->rules[i].path, O_PATH | O_CLOEXEC);
		if (pfd < 0) {
			fail("landlock: open %s", c->rules[i].path);
			close((int)ruleset);
			return -1;
		}
		struct ll_path_beneath pb = {c->rules[i].access, pfd};
		long r = syscall(SYS_landlock_add_rule, (int)ruleset, 1 /* PATH_BENEATH */, &pb, 0);
		int saved = errno;
		close(pfd);
		if (r != 0) {
			errno = saved;
			fail("landlock: rule %s (access %#llx)", c->rules[i].path, (unsigned long long)c->rules[i].access);
			close((int)ruleset);
			return -1;
		}
	}
	if (syscall(SYS_landlock_restrict_self, (int)ruleset, 0) != 0) {
		fail("landlock: restrict self");
		close((int)ruleset);
		return -1;
	}
	close((int)ruleset);
	return 0;
}

static int setup(const struct config *c, int64_t *jail_us)
{
	if (c->jail_seen) {
		int64_t begin = now_us();
		if (build_jail(c) != 0)
			return -1;
		*jail_us = now_us() - begin;
	}
	if (c->hostname && *c->hostname && sethostname(c->hostname, strlen(c->hostname)) != 0)
		return fail("sethostname");
	for (int i = 0; i < c->nrlimits; i++) {
		struct rlimit rl = {c->rlimits[i].value, c->rlimits[i].value};
		if (setrlimit((int)c->rlimits[i].resource, &rl) != 0)
			return fail("setrlimit %u=%llu", c->rlimits[i].resource,
				    (unsigned long long)c->rlimits[i].value);
	}
	// Descriptors the supervisor leaked must not reach the worker; the
	// gate too is close-on-exec, which is how the parent sees the execve.
	if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0)
		return fail("close_range");
	if (!c->harden)
		return 0;
	if (drop_capabilities() != 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return fail("prctl(PR_SET_NO_NEW_PRIVS)");
	if (c->landlock && apply_landlock(c) != 0)
		return -1;
	for (int i = 0; i < c->nprogs; i++) {
		struct sock_fprog prog = {c->progs[i].len, c->progs[i].insns};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
			return fail("seccomp: program %d", i);
	}
	return 0;
}

// read_config reads until EOF; it returns the length, 0 for an empty gate
// (the supervisor decided not to launch), -1 on error.
static ssize_t read_config(unsigned char *buf, size_t cap)
{
	size_t n = 0;
	for (;;) {
		if (n == cap)
			return fail_plain("gate: bad config: larger than 1 MiB");
		ssize_t r = read(gate_fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return 0; // the supervisor is gone: run nothing
		}
		if (r == 0)
			return (ssize_t)n;
		n += (size_t)r;
	}
}

void cyber_gate_run(int fd)
{
	int64_t entered = now_us();
	gate_fd = fd;
	// One spare byte: terminate() writes a NUL after the last value.
	unsigned char *buf = malloc(MAX_CONFIG + 2);
	static struct config cfg;
	if (buf == NULL)
		_exit(GATE_EXIT_SETUP);
	ssize_t n = read_config(buf, MAX_CONFIG + 1);
	int64_t opened = now_us();
	if (n == 0)
		_exit(GATE_EXIT_NO_CONFIG);
	if (n < 0 || parse(buf, (size_t)n, &cfg) != 0) {
		report_error();
		_exit(GATE_EXIT_SETUP);
	}
	terminate(buf, (size_t)n);
	int64_t jail_us = 0;
	if (setup(&cfg, &jail_us) != 0) {
		report_error();
		_exit(GATE_EXIT_SETUP);
	}
	int64_t harden_us = now_us() - opened - jail_us;
	char st[512];
	int len = snprintf(st, sizeof st,
			   "{\"landlock_abi\":%u,\"seccomp\":%s,\"nnp\":%s,\"caps_dropped\":%s,\"jail\":%s,"
			   "\"gate_us\":%lld,\"jail_us\":%lld,\"harden_us\":%lld}",
			   cfg.harden && cfg.landlock ? cfg.abi : 0, cfg.harden && cfg.nprogs > 0 ? "true" : "false",
			   cfg.harden ? "true" : "false", cfg.harden ? "true" : "false",
			   cfg.jail_seen ? "true" : "false", (long long)(opened - entered), (long long)jail_us,
			   (long long)harden_us);
	if (write_all(gate_fd, st, (size_t)len) != 0)
		_exit(GATE_EXIT_SETUP); // the supervisor gave up on us: run nothing
	cfg.args[cfg.nargs] = NULL;
	cfg.env[cfg.nenv] = NULL;
	execve(cfg.path, cfg.args, cfg.env);
	fail("execve %s", cfg.path);
	report_error();
	_exit(GATE_EXIT_SETUP);
}
