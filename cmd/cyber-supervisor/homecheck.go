package main

import (
	"errors"

	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// A home the supervisor cannot use is refused before anything is done in
// it: no store opened, no recovery run, no worker started. Before, a home
// whose socket path was too long ran recovery and then failed listening
// (internal_error), and a read-only home or one that is a file failed
// as internal_error wherever the first write came.

// maxSocketPath is the longest path a unix socket may have: sun_path's
// 108 bytes with the terminating NUL.
const maxSocketPath = 107

// checkSocketPath refuses (usage, exit 2) a home whose API socket,
// <home>/supervisor.sock, would not fit sun_path: serve could never
// listen there, and no client could reach it.
func checkSocketPath(flag string) error {
	home, err := supervisor.ResolveHome(flag)
	if err != nil {
		return nil // the open says it
	}
	if sock := supervisor.SocketPath(home); len(sock) > maxSocketPath {
		return usagef("home %s is too long for the daemon's unix socket: %s is %d bytes, at most %d; choose a shorter --home",
			home, sock, len(sock), maxSocketPath)
	}
	return nil
}

// prepareHome makes the home when it is missing and checks that it is a
// directory this process can write: an io_error otherwise (a read-only
// file system, a file in its place, no permission).
func prepareHome(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return protocol.Errorf(protocol.CodeIOError, "home %s cannot be made: %v", home, osCause(err))
	}
	st, err := os.Stat(home)
	if err != nil {
		return protocol.Errorf(protocol.CodeIOError, "home %s: %v", home, osCause(err))
	}
	if !st.IsDir() {
		return protocol.Errorf(protocol.CodeIOError, "home %s is not a directory", home)
	}
	// access(2) says EROFS for a read-only file system even to root.
	if err := unix.Access(home, unix.W_OK|unix.X_OK); err != nil {
		return protocol.Errorf(protocol.CodeIOError, "home %s is not writable: %v", home, osCause(err))
	}
	return nil
}

// osCause is the system's word for err (its errno), else err.
func osCause(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// ioErrno reports whether err comes from the host's file system refusing
// or failing a write (the home's I/O), which is io_error, not an
// internal error of the supervisor.
func ioErrno(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.ENOTDIR, syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EFBIG, syscall.EISDIR:
		return true
	}
	return false
}
