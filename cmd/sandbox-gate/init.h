// Internal to the C init: the decoded config and the steps of gate.c,
// wire.c, jail.c and harden.c. One config, one thread, no allocation
// after the read: the init execs or exits.
#ifndef CYBER_GATE_INIT_H
#define CYBER_GATE_INIT_H

#include <linux/filter.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_CONFIG (1 << 20)
#define MAX_LIST 4096

enum {
	TAG_PATH = 1, TAG_ARG, TAG_ENV, TAG_HOSTNAME, TAG_RLIMIT,
	TAG_JAIL_ROOT, TAG_JAIL_WORKER, TAG_JAIL_WORK, TAG_JAIL_SOCKETS, TAG_JAIL_TMPFS,
	TAG_HARDEN, TAG_LANDLOCK, TAG_LANDLOCK_RULE, TAG_SECCOMP, TAG_NETNS,
	TAG_CGROUPNS, TAG_JAIL_WORK_FD, TAG_IDENTITY,
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
	const char *root, *worker, *work;
	int work_fd; // 0, or a detached mount to attach at /work instead of work
	// Bounds of the tmpfs the init mounts on /run/plugin and /tmp.
	uint64_t sock_bytes, sock_inodes, tmp_bytes, tmp_inodes;
	int harden;
	int identity; // switch to uid/gid after the jail
	uint32_t uid, gid;
	int netns; // 0, or a network namespace descriptor to join first
	int cgroupns; // unshare the cgroup namespace after netns
	int landlock;
	uint32_t abi;
	uint64_t ll_fs, ll_net, ll_scoped;
	struct llrule rules[64];
	int nrules;
	struct prog progs[8];
	int nprogs;
};

// gate.c: the first error ("step: strerror", as Go's %w reads) and
// the clock for the status timings.
int gate_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int gate_fail_plain(const char *msg);
int64_t gate_now_us(void);

// wire.c: the config from the gate, decoded in place.
ssize_t gate_read_config(int fd, unsigned char *buf, size_t cap);
int gate_parse(unsigned char *b, size_t n, struct config *c);
void gate_terminate(unsigned char *b, size_t n);

// jail.c and harden.c: the steps between the gate and the execve.
int gate_build_jail(const struct config *c);
int gate_setup(const struct config *c, int64_t *jail_us);

#endif
