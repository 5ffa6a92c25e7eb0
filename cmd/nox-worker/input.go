package main

import (
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// loadProgram reads INPUT as frozen bundle bytes by the rule both CLIs
// share (protocol.ReadProgram): a ProgramBundle (.json) as it is, a raw
// formula (.nox) wrapped into a minimal bundle, the way joy accepts raw
// formulas. The bytes are admitted later, by the worker, like any job's.
func loadProgram(path string) ([]byte, error) { return protocol.ReadProgram(path) }

// loadInputs returns the public inputs from --input-values or
// --input-file (schema v1; a non-empty secret list is refused), or none.
func loadInputs(o *options) ([]uint64, error) {
	switch {
	case o.inputValues != nil:
		return protocol.ParseValues(*o.inputValues)
	case o.inputFile != "":
		return protocol.ReadInputFile(o.inputFile)
	}
	return []uint64{}, nil
}
