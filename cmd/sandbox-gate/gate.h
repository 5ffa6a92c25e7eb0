// Shared by gate.c and the cgo constructor; the values are those of
// package sandbox/gate (gate_cgo_test.go checks them).
#ifndef CYBER_GATE_H
#define CYBER_GATE_H

#define GATE_ARG "__cyber_sandbox_init"
#define GATE_EXIT_NO_CONFIG 111
#define GATE_EXIT_SETUP 112

// cyber_gate_run never returns: it execs the worker or exits.
void cyber_gate_run(int fd);

#endif
