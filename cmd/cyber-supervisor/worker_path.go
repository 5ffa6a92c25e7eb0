package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// EnvWorker names the nox-worker binary when --worker is not given.
const EnvWorker = "CYBER_SUPERVISOR_WORKER"

// findWorker: the flag, $CYBER_SUPERVISOR_WORKER, nox-worker beside this
// executable, then $PATH.
func findWorker(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if env := os.Getenv(EnvWorker); env != "" {
		return filepath.Abs(env)
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "nox-worker")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("nox-worker"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("nox-worker not found: build it (scripts/build.sh) or pass --worker")
}
