// Everything between the gate and the execve: the network and cgroup
// namespaces, the jail (jail.c), hostname, rlimits, descriptors, the
// bounding set, the identity, capabilities, no_new_privs, Landlock, seccomp — in that order, as
// setupInit in sandbox/gate/init_linux.go.

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "init.h"

// The bounding and ambient sets go first (that needs CAP_SETPCAP, so
// before an identity switch); the rest of the sets after it.
static int drop_bounding_set(void)
{
	for (int cap = 0; cap <= 63; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
			if (errno == EINVAL)
				break; // past the kernel's last capability
			return gate_fail("prctl(PR_CAPBSET_DROP, %d)", cap);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
		return gate_fail("prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
	return 0;
}

// No supplementary groups, then the gid, then the uid: raw syscalls, so
// that no C library broadcasts them (the init has one thread anyway).
// The kernel clears the parent-death signal when the uid changes, so it
// is armed again: without it a worker outlives a supervisor that dies
// (SIGKILL, a crash). Were the supervisor already gone, the status write
// to it that follows fails and the gate never execs.
static int switch_identity(const struct config *c)
{
	if (syscall(SYS_setgroups, 0, NULL) != 0)
		return gate_fail("setgroups(0)");
	if (syscall(SYS_setresgid, c->gid, c->gid, c->gid) != 0)
		return gate_fail("setresgid(%u)", c->gid);
	if (syscall(SYS_setresuid, c->uid, c->uid, c->uid) != 0)
		return gate_fail("setresuid(%u)", c->uid);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		return gate_fail("prctl(PR_SET_PDEATHSIG)");
	return 0;
}

static int clear_capabilities(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) != 0)
		return gate_fail("capset");
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
		return gate_fail("landlock: create ruleset (ABI %u)", c->abi);
	for (int i = 0; i < c->nrules; i++) {
		int pfd = open(c->rules[i].path, O_PATH | O_CLOEXEC);
		if (pfd < 0) {
			gate_fail("landlock: open %s", c->rules[i].path);
			close((int)ruleset);
			return -1;
		}
		struct ll_path_beneath pb = {c->rules[i].access, pfd};
		long r = syscall(SYS_landlock_add_rule, (int)ruleset, 1 /* PATH_BENEATH */, &pb, 0);
		int saved = errno;
		close(pfd);
		if (r != 0) {
			errno = saved;
			gate_fail("landlock: rule %s (access %#llx)", c->rules[i].path, (unsigned long long)c->rules[i].access);
			close((int)ruleset);
			return -1;
		}
	}
	if (syscall(SYS_landlock_restrict_self, (int)ruleset, 0) != 0) {
		gate_fail("landlock: restrict self");
		close((int)ruleset);
		return -1;
	}
	close((int)ruleset);
	return 0;
}

int gate_setup(const struct config *c, int64_t *jail_us)
{
	if (c->netns != 0) {
		if (setns(c->netns, CLONE_NEWNET) != 0)
			return gate_fail("setns(network namespace, fd %d)", c->netns);
		close(c->netns);
	}
	if (c->cgroupns && unshare(CLONE_NEWCGROUP) != 0)
		return gate_fail("unshare(CLONE_NEWCGROUP)");
	if (c->jail_seen) {
		int64_t begin = gate_now_us();
		if (gate_build_jail(c) != 0)
			return -1;
		*jail_us = gate_now_us() - begin;
	}
	if (c->hostname && *c->hostname && sethostname(c->hostname, strlen(c->hostname)) != 0)
		return gate_fail("sethostname");
	for (int i = 0; i < c->nrlimits; i++) {
		struct rlimit rl = {c->rlimits[i].value, c->rlimits[i].value};
		if (setrlimit((int)c->rlimits[i].resource, &rl) != 0)
			return gate_fail("setrlimit %u=%llu", c->rlimits[i].resource,
				    (unsigned long long)c->rlimits[i].value);
	}
	// Descriptors the supervisor leaked must not reach the worker; the
	// gate too is close-on-exec, which is how the parent sees the execve.
	if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0)
		return gate_fail("close_range");
	if (c->harden && drop_bounding_set() != 0)
		return -1;
	if (c->identity && switch_identity(c) != 0)
		return -1;
	if (!c->harden)
		return 0;
	if (clear_capabilities() != 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return gate_fail("prctl(PR_SET_NO_NEW_PRIVS)");
	if (c->landlock && apply_landlock(c) != 0)
		return -1;
	for (int i = 0; i < c->nprogs; i++) {
		struct sock_fprog prog = {c->progs[i].len, c->progs[i].insns};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
			return gate_fail("seccomp: program %d", i);
	}
	return 0;
}
