package main

import (
	"path/filepath"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// readRegular reads a file the way joy admits them, by the rule both
// CLIs share (protocol.ReadLocalFile): a regular file, not a symlink, at
// most limit bytes. tooLarge is the code of a file over the limit.
func readRegular(what, path string, limit int64, tooLarge protocol.Code) ([]byte, error) {
	return protocol.ReadLocalFile(what, path, limit, tooLarge)
}

// loadProgram reads INPUT as frozen bundle bytes: a .json file is a
// ProgramBundle taken as it is; a .nox file is a raw formula wrapped into
// a minimal bundle (protocol.WrapNox), the way joy accepts raw formulas.
// The bytes are admitted later, by the worker, like any job's.
func loadProgram(path string) ([]byte, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return readRegular("program", path, protocol.MaxBundleBytes, protocol.CodeInvalidJob)
	case ".nox":
		src, err := readRegular("program", path, protocol.MaxAssemblyBytes, protocol.CodeInvalidJob)
		if err != nil {
			return nil, err
		}
		return protocol.WrapNox(path, src)
	}
	return nil, protocol.Errorf(protocol.CodeInvalidJob, "program %s: must be a ProgramBundle (.json) or a raw formula (.nox)", path)
}

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
