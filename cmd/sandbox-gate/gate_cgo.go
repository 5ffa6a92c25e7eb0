//go:build cgo && linux && (amd64 || arm64 || riscv64 || ppc64le || loong64)

package main

// The gated init runs from this constructor, before the Go runtime starts:
// glibc passes init_array functions (argc, argv, envp). Any other start
// falls through to main. Little-endian targets only: the seccomp programs
// arrive little endian and are handed to the kernel as they are.

/*
#cgo CFLAGS: -O2 -Wall -Wextra -Werror
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gate.h"

__attribute__((constructor)) static void cyber_gate_constructor(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 3 || strcmp(argv[1], GATE_ARG) != 0)
		return;
	char *end = NULL;
	long fd = strtol(argv[2], &end, 10);
	if (end == argv[2] || *end != 0 || fd < 3 || fd > 1 << 20)
		_exit(GATE_EXIT_SETUP);
	cyber_gate_run((int)fd);
}
*/
import "C"

// cInit says that this binary carries the C init.
const cInit = true
