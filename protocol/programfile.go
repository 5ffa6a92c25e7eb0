package protocol

import (
	"path/filepath"
	"strings"
)

// ReadProgram is the one rule by which both CLIs read the program a user
// names as INPUT, so that the same file is the same job through either:
// a .json file is a ProgramBundle taken as it is (at most MaxBundleBytes),
// a .nox file a raw formula wrapped into a minimal bundle (WrapNox, at most
// MaxAssemblyBytes); the extension's case does not matter. Any other name
// is refused before it is opened: a certificate or an input file given as
// INPUT by mistake would otherwise be parsed as a formula and fail with a
// syntax error that does not say what went wrong. The file itself is read
// by ReadLocalFile's rule.
func ReadProgram(path string) ([]byte, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		return ReadLocalFile("program", path, MaxBundleBytes, CodeInvalidJob)
	case ".nox":
		src, err := ReadLocalFile("program", path, MaxAssemblyBytes, CodeInvalidJob)
		if err != nil {
			return nil, err
		}
		return WrapNox(path, src)
	}
	return nil, Errorf(CodeInvalidJob, "program %s: must be a raw formula (.nox) or a ProgramBundle (.json)", path)
}
