package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

// certSuffix is the conventional suffix of a compressed certificate.
const certSuffix = ".cnxt.zst"

// cmdProve proves INPUT. The worker publishes the certificate in a private
// work directory next to the output (same file system), and the command
// then moves it into place atomically: the output is either absent, the
// old file (without --force nothing is ever replaced), or the complete new
// certificate.
func cmdProve(ctx context.Context, w *worker.Worker, o *options, pos []string) (any, humanFn, error) {
	in, err := onePositional("prove", "INPUT", pos)
	if err != nil {
		return nil, nil, err
	}
	if err := checkBudget(o.budget); err != nil {
		return nil, nil, err
	}
	out := o.output
	if out == "" {
		base := filepath.Base(in)
		out = filepath.Join(filepath.Dir(in), strings.TrimSuffix(base, filepath.Ext(base))+certSuffix)
	}
	if !o.force {
		if _, err := os.Lstat(out); err == nil {
			return nil, nil, usageError("output %s exists; --force replaces it", out)
		}
	}
	bundle, err := loadProgram(in)
	if err != nil {
		return nil, nil, err
	}
	inputs, err := loadInputs(o)
	if err != nil {
		return nil, nil, err
	}
	work, err := os.MkdirTemp(filepath.Dir(out), ".nox-worker-prove-")
	if err != nil {
		return nil, nil, protocol.Errorf(protocol.CodeIOError, "cannot create a work directory next to %s", out)
	}
	defer os.RemoveAll(work)
	if work, err = filepath.Abs(work); err != nil {
		return nil, nil, protocol.Errorf(protocol.CodeIOError, "cannot resolve the work directory")
	}
	spec := cliJob(protocol.OpProve, o.profile, bundle, inputs, o.budget)
	spec.Limits.ArtifactBytes = o.artifactLimit
	res, err := runJob(ctx, w, spec, work)
	if err != nil {
		return nil, nil, err
	}
	if err := place(filepath.Join(work, res.Artifact.Name), out, o.force); err != nil {
		return nil, nil, err
	}
	result := proveJSON{
		Kind:    res.Kind,
		Profile: res.Profile,
		Artifact: artifactJSON{
			Path: out, Size: u64(res.Artifact.Size), SHA256: fmt.Sprintf("%x", res.Artifact.SHA256),
		},
		Program:    programOf(res.ProgramIdentity),
		Inputs:     u64s(inputs),
		Output:     u64s(res.Output),
		Reductions: u64(res.Reductions),
		Budget:     u64(res.Budget),
		Disclosure: disclosureComplete,
		Telemetry:  telemetryJSON{WallTimeMS: u64(res.Telemetry.WallTimeMS)},
	}
	human := func(stdout, stderr io.Writer) {
		fmt.Fprintln(stdout, out)
		fmt.Fprintf(stderr, "Proved public execution in %d ms: %d reductions, %d bytes\n",
			res.Telemetry.WallTimeMS, res.Reductions, res.Artifact.Size)
		fmt.Fprintf(stderr, "Output: [%s]\n", strings.ReplaceAll(protocol.FormatValues(res.Output), ",", ", "))
	}
	return result, human, nil
}

// place moves the published certificate to its final path: a rename that
// never replaces unless force, then an fsync of the directory so that the
// name survives a crash.
func place(src, dst string, force bool) error {
	// The worker publishes 0600 inside its sandbox; a certificate is
	// public, and the user's file gets the usual mode.
	if err := os.Chmod(src, 0o644); err != nil {
		return protocol.Errorf(protocol.CodeIOError, "cannot set the mode of the certificate")
	}
	var err error
	if force {
		err = os.Rename(src, dst)
	} else {
		err = unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			// No RENAME_NOREPLACE here: link(2) never replaces either.
			if err = os.Link(src, dst); err == nil {
				os.Remove(src)
			}
		}
	}
	switch {
	case errors.Is(err, unix.EEXIST), errors.Is(err, os.ErrExist):
		return usageError("output %s exists; --force replaces it", dst)
	case err != nil:
		return protocol.Errorf(protocol.CodeIOError, "cannot move the certificate to %s", dst)
	}
	d, err := os.Open(filepath.Dir(dst))
	if err != nil {
		return protocol.Errorf(protocol.CodeIOError, "cannot open the directory of %s", dst)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return protocol.Errorf(protocol.CodeIOError, "cannot fsync the directory of %s", dst)
	}
	return nil
}
