//go:build cgo && linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package main

// The gated init runs from this constructor, before the Go runtime starts.
// Any other start falls through to main. Little-endian targets only: the
// seccomp programs arrive little endian and are handed to the kernel as
// they are.
//
// glibc passes init_array functions (argc, argv, envp); musl (which
// scripts/build-gate.sh links when it can: its start-up is 0.3 ms
// cheaper) passes nothing. There argc and argv are read back from the
// process's initial stack, whose layout the System V ABI fixes: argc,
// argv[0..argc-1], NULL, envp..., with environ pointing at envp[0]. So
// below environ lies argv's NULL, then argv backwards, then argc: the
// first k with p[-k-1] == k, which no argv pointer can equal.

/*
#cgo CFLAGS: -O2 -Wall -Wextra -Werror
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gate.h"

static void cyber_gate_start(long argc, char **argv)
{
	if (argc < 3 || strcmp(argv[1], GATE_ARG) != 0)
		return;
	char *end = NULL;
	long fd = strtol(argv[2], &end, 10);
	if (end == argv[2] || *end != 0 || fd < 3 || fd > 1 << 20)
		_exit(GATE_EXIT_SETUP);
	cyber_gate_run((int)fd);
}

#ifdef __GLIBC__
__attribute__((constructor)) static void cyber_gate_constructor(int argc, char **argv, char **envp)
{
	(void)envp;
	cyber_gate_start(argc, argv);
}
#else
extern char **environ;

__attribute__((constructor)) static void cyber_gate_constructor(void)
{
	char **p = environ - 1; // argv's terminating NULL
	if (environ == NULL || *p != NULL)
		return;
	for (long k = 1; k <= 4096; k++) {
		if ((long)p[-k - 1] == k) {
			cyber_gate_start(k, p - k);
			return;
		}
	}
}
#endif
*/
import "C"

// cInit says that this binary carries the C init.
const cInit = true
