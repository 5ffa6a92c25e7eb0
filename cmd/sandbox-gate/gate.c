// The C gated init. It runs from an ELF constructor, before the Go runtime
// of this binary starts, and either execs the worker or exits: a gated
// launch never pays for a Go runtime start here (about 2 ms of CPU and
// 250 page faults on the machines this was measured on).
//
// It reads the same wire as package sandbox/gate (wire.c; gate.Magic and
// the record tags of codec.go) and performs the same steps in the same
// order (jail.c, harden.c); the sandbox tests run against both. Everything it applies was decided by
// the supervisor: it only parses, mounts, and loads.

#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"
#include "init.h"

static int gate_fd = -1;
static char err_buf[1024];

int64_t gate_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

// gate_fail records the first error: "step: strerror", as Go's %w reads.
int gate_fail(const char *fmt, ...)
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

int gate_fail_plain(const char *msg)
{
	errno = 0;
	return gate_fail("%s", msg);
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

void cyber_gate_run(int fd)
{
	int64_t entered = gate_now_us();
	gate_fd = fd;
	// One spare byte: terminate() writes a NUL after the last value.
	unsigned char *buf = malloc(MAX_CONFIG + 2);
	static struct config cfg;
	if (buf == NULL)
		_exit(GATE_EXIT_SETUP);
	ssize_t n = gate_read_config(gate_fd, buf, MAX_CONFIG + 1);
	int64_t opened = gate_now_us();
	if (n == 0)
		_exit(GATE_EXIT_NO_CONFIG);
	if (n < 0 || gate_parse(buf, (size_t)n, &cfg) != 0) {
		report_error();
		_exit(GATE_EXIT_SETUP);
	}
	gate_terminate(buf, (size_t)n);
	int64_t jail_us = 0;
	if (gate_setup(&cfg, &jail_us) != 0) {
		report_error();
		_exit(GATE_EXIT_SETUP);
	}
	int64_t harden_us = gate_now_us() - opened - jail_us;
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
	gate_fail("execve %s", cfg.path);
	report_error();
	_exit(GATE_EXIT_SETUP);
}
