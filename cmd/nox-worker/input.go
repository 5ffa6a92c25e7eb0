package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// readRegular reads a file the way joy admits them: a regular file, not a
// symlink (the last component is opened without following), at most limit
// bytes, checked on the open descriptor and again while reading. Messages
// name the path the user gave, never the contents. tooLarge is the code of
// a file over the limit.
func readRegular(what, path string, limit int64, tooLarge protocol.Code) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s %s: is a symlink", what, path)
		case errors.Is(err, os.ErrNotExist):
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s %s: does not exist", what, path)
		case errors.Is(err, os.ErrPermission):
			return nil, protocol.Errorf(protocol.CodeIOError, "%s %s: permission denied", what, path)
		}
		return nil, protocol.Errorf(protocol.CodeIOError, "%s %s: cannot open", what, path)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeIOError, "%s %s: cannot stat", what, path)
	}
	if !st.Mode().IsRegular() {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s %s: not a regular file", what, path)
	}
	if st.Size() > limit {
		return nil, protocol.Errorf(tooLarge, "%s %s: %d bytes, at most %d", what, path, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeIOError, "%s %s: read failed", what, path)
	}
	if int64(len(b)) > limit {
		return nil, protocol.Errorf(tooLarge, "%s %s: grew past %d bytes while being read", what, path, limit)
	}
	return b, nil
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
