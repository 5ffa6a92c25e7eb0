// Package artifacts owns the per-attempt sandbox directories that workers
// write their artifacts into, and the supervisor's way of reading them back.
//
// Workers are untrusted. Every operation on a sandbox goes through a
// directory file descriptor held since the directory was made, so renaming or
// replacing a path component afterwards cannot redirect a write or a read.
// Reads never follow a symlink, never leave the directory, accept only
// regular files and are bounded twice: by the size fstat reports and by the
// bytes actually read. Publication is temp file, fsync, rename, directory
// fsync: a reader sees either nothing or the complete file under its final
// name.
//
// Names of jobs and artifacts are deliberately narrow (see ValidName); the
// on-disk layout and the guarantees are described in docs/artifacts.md.
//
// Errors wrap one of the sentinel errors below where a caller can act on the
// cause: ErrTooLarge maps to the contract code artifact_too_large, the rest
// to io_error (or to a rejected artifact on the supervisor side).
package artifacts
