package main

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// announceSwapping moves the honest socket to the announced name and then
// keeps exchanging that name with a symlink to the host socket for as long
// as the worker lives: whenever the supervisor looks, the name is one or
// the other.
func announceSwapping(dir, honest string) (string, error) {
	p := filepath.Join(dir, "plugin-swap")
	decoy := filepath.Join(dir, "decoy")
	if err := unix.Renameat2(unix.AT_FDCWD, honest, unix.AT_FDCWD, p, 0); err != nil {
		return "", err
	}
	if err := os.Symlink(TargetSocket, decoy); err != nil {
		return "", err
	}
	go func() {
		for {
			if unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, decoy, unix.RENAME_EXCHANGE) != nil {
				return
			}
		}
	}()
	return p, nil
}
