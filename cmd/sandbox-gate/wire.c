// The gate wire, decoded in place: package sandbox/gate's codec.go is the
// reference (same tags, limits and verdicts; FuzzCInitAgreesWithGo checks
// that both call the same inputs bad).

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "init.h"

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

// gate_parse decodes the records in place. Its strings are not yet
// terminated: gate_terminate does that once every header is read, by
// overwriting the byte after each value (so the buffer has one spare byte).
int gate_parse(unsigned char *b, size_t n, struct config *c)
{
	static const char magic[] = "CSGATE5\n";
	if (n < sizeof magic - 1 || memcmp(b, magic, sizeof magic - 1) != 0)
		return gate_fail_plain("gate: bad config: no \"CSGATE5\" header (another wire version?)");
	size_t at = sizeof magic - 1;
	while (at < n) {
		if (n - at < 5)
			return gate_fail_plain("gate: bad config: truncated record header");
		unsigned tag = b[at];
		uint32_t len = le32(b + at + 1);
		at += 5;
		if ((size_t)len > n - at)
			return gate_fail_plain("gate: bad config: record overruns the config");
		unsigned char *v = b + at;
		at += len;
		int is_string = tag == TAG_PATH || tag == TAG_ARG || tag == TAG_ENV || tag == TAG_HOSTNAME ||
				(tag >= TAG_JAIL_ROOT && tag <= TAG_JAIL_WORK);
		if (is_string && memchr(v, 0, len) != NULL)
			return gate_fail_plain("gate: bad config: NUL in a string");
		if ((tag >= TAG_JAIL_ROOT && tag <= TAG_JAIL_TMPFS) || tag == TAG_JAIL_WORK_FD) {
			// A work mount stands in for the work dir: one or the other.
			int bit = 1 << ((tag == TAG_JAIL_WORK_FD ? TAG_JAIL_WORK : tag) - TAG_JAIL_ROOT);
			if (c->jail_seen & bit)
				return gate_fail_plain("gate: bad config: jail record twice");
			c->jail_seen |= bit;
		}
		// Terminated by gate_terminate once every header is read.
		char *s = (char *)v;
		switch (tag) {
		case TAG_PATH:
			if (c->path)
				return gate_fail_plain("gate: bad config: two program paths");
			c->path = s;
			c->path_len = len;
			break;
		case TAG_ARG:
			if (c->nargs == MAX_LIST)
				return gate_fail_plain("gate: bad config: too many arguments");
			c->args[c->nargs++] = s;
			break;
		case TAG_ENV:
			if (c->nenv == MAX_LIST)
				return gate_fail_plain("gate: bad config: too many environment entries");
			c->env[c->nenv++] = s;
			break;
		case TAG_HOSTNAME:
			c->hostname = s;
			break;
		case TAG_RLIMIT:
			if (len != 12 || c->nrlimits == 16)
				return gate_fail_plain("gate: bad config: bad rlimit record");
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
			if (len == 0)
				return gate_fail_plain("gate: bad config: empty work dir");
			c->work = s;
			break;
		case TAG_JAIL_WORK_FD:
			if (len != 4 || le32(v) < 3 || le32(v) > (1u << 20))
				return gate_fail_plain("gate: bad config: bad work mount record");
			c->work_fd = (int)le32(v);
			break;
		case TAG_JAIL_SOCKETS:
		case TAG_JAIL_TMPFS:
			// tmpfs reads 0 as "no limit": never let it.
			if (len != 16 || le64(v) == 0 || le64(v + 8) == 0)
				return gate_fail_plain("gate: bad config: bad tmpfs record");
			if (tag == TAG_JAIL_SOCKETS) {
				c->sock_bytes = le64(v);
				c->sock_inodes = le64(v + 8);
			} else {
				c->tmp_bytes = le64(v);
				c->tmp_inodes = le64(v + 8);
			}
			break;
		case TAG_HARDEN:
			if (len != 0)
				return gate_fail_plain("gate: bad config: bad harden record");
			c->harden = 1;
			break;
		case TAG_IDENTITY:
			if (len != 8 || c->identity)
				return gate_fail_plain("gate: bad config: bad identity record");
			c->uid = le32(v);
			c->gid = le32(v + 4);
			// Root is no identity to switch to, -1 no id at all.
			if (c->uid == 0 || c->gid == 0 || c->uid == UINT32_MAX || c->gid == UINT32_MAX)
				return gate_fail_plain("gate: bad config: bad identity record");
			c->identity = 1;
			break;
		case TAG_CGROUPNS:
			if (len != 0)
				return gate_fail_plain("gate: bad config: bad cgroup namespace record");
			c->cgroupns = 1;
			break;
		case TAG_NETNS:
			if (len != 4 || c->netns != 0 || le32(v) < 3 || le32(v) > (1u << 20))
				return gate_fail_plain("gate: bad config: bad network namespace record");
			c->netns = (int)le32(v);
			break;
		case TAG_LANDLOCK:
			if (len != 28 || c->landlock)
				return gate_fail_plain("gate: bad config: bad Landlock ruleset record");
			c->landlock = 1;
			c->abi = le32(v);
			c->ll_fs = le64(v + 4);
			c->ll_net = le64(v + 12);
			c->ll_scoped = le64(v + 20);
			break;
		case TAG_LANDLOCK_RULE:
			if (!c->landlock || len < 9 || c->nrules == 64)
				return gate_fail_plain("gate: bad config: bad Landlock rule record");
			if (memchr(v + 8, 0, len - 8) != NULL)
				return gate_fail_plain("gate: bad config: NUL in a string");
			c->rules[c->nrules].access = le64(v);
			c->rules[c->nrules].path = (const char *)(v + 8);
			c->nrules++;
			break;
		case TAG_SECCOMP:
			if (len == 0 || len % 8 != 0 || len > 8 * 4096 || c->nprogs == 8)
				return gate_fail_plain("gate: bad config: bad seccomp record");
			c->progs[c->nprogs].len = (uint16_t)(len / 8);
			c->progs[c->nprogs].insns = (struct sock_filter *)v;
			c->nprogs++;
			break;
		default:
			return gate_fail_plain("gate: bad config: unknown record");
		}
	}
	if (c->jail_seen != 0 && c->jail_seen != 0x1f)
		return gate_fail_plain("gate: bad config: incomplete jail");
	if (c->path == NULL || c->path_len == 0 || c->nargs == 0)
		return gate_fail_plain("gate: bad config: no program");
	return 0;
}

// gate_terminate NUL-terminates every string in place. It runs after
// gate_parse, which has read every header, so overwriting the byte after
// each value (the next tag, or the spare byte) loses nothing.
void gate_terminate(unsigned char *b, size_t n)
{
	size_t at = 8;
	while (at < n) {
		uint32_t len = le32(b + at + 1);
		at += 5 + len;
		b[at] = 0;
	}
}

// gate_read_config reads until EOF; it returns the length, 0 for an empty
// gate (the supervisor decided not to launch), -1 on error.
ssize_t gate_read_config(int fd, unsigned char *buf, size_t cap)
{
	size_t n = 0;
	for (;;) {
		if (n == cap)
			return gate_fail_plain("gate: bad config: larger than 1 MiB");
		ssize_t r = read(fd, buf + n, cap - n);
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
