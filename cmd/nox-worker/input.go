package main

import (
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// readRegular reads a file the way joy admits them, by the rule both
// CLIs share (protocol.ReadLocalFile): a regular file, not a symlink, at
// most limit bytes. tooLarge is the code of a file over the limit.
func readRegular(what, path string, limit int64, tooLarge protocol.Code) ([]byte, error) {
	return protocol.ReadLocalFile(what, path, limit, tooLarge)
}

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
