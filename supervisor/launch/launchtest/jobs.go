package launchtest

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Add adds its two inputs: [5 [[0 2] [0 6]]].
const Add = "[5 [[0 2] [0 6]]]"

// spin is F(n) = 0 if n = 0, else F(n−1) + F(n−1): 2^n calls in constant
// memory (integration/testdata/spin.nox).
const spin = "[4 [[9 [[0 3] [1 0]]] [[1 0] [5 [[2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]] [2 [[3 [[0 2] [6 [[0 3] [1 1]]]]] [0 2]]]]]]]]"

// Spin is a job program that applies spin to [spin n], n the job's single
// input: at 60 it runs until it is stopped.
const Spin = "[2 [[3 [[1 " + spin + "] [0 2]]] [1 " + spin + "]]]"

// Job is the JSON of a job spec running program on inputs.
func Job(t testing.TB, id string, op protocol.Operation, program string, inputs []uint64, lim protocol.Limits) []byte {
	return JobWith(t, id, op, program, inputs, lim, nil)
}

// JobWith is Job with a last edit of the spec.
func JobWith(t testing.TB, id string, op protocol.Operation, program string, inputs []uint64, lim protocol.Limits, edit func(*protocol.JobSpec)) []byte {
	t.Helper()
	bundle, err := protocol.WrapNox(id, []byte(program))
	if err != nil {
		t.Fatal(err)
	}
	if lim.Reductions == 0 {
		lim.Reductions = 1_000_000
	}
	js := protocol.JobSpec{Contract: protocol.ContractV1, JobID: id, Operation: op, Profile: protocol.ProfilePublicTrace,
		Program: protocol.ProgramSpec{Bundle: bundle}, Inputs: inputs, Limits: lim}
	if edit != nil {
		edit(&js)
	}
	b, err := js.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// randomTag keeps the suite's job names (and so cgroup names) apart
// from any other test's.
func randomTag() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
