// Package fencing is local dispatch and fencing (docs/fencing.md): the
// neuron's root, placement and grant; progs and their invocations; the
// dispatch protocol that takes an act from a proposal to its outcome —
// prepare (the attempt is recorded, a single-use token is made),
// dispatch (the token is consumed, the one-use claim is committed and
// the act is called under the ward guard), outcome (once); the crash
// rule (an attempt without an outcome stays unknown and is never
// dispatched again; only reconciliation resolves it); manual take; and
// the runtime that drives an invocation's nox program through its acts,
// slice by slice, with durable VM step reservations, its run kept
// suspended between slices (live.go, park.go) and resumed by
// deterministic replay only when none is kept (a restart).
//
// Every rule a record can break is also checked by the store inside its
// transaction (supervisor/store); the engine adds the ward (what the
// grant permits), the guard (ordering revocations before or after a
// dispatch) and the token.
package fencing
