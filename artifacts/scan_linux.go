package artifacts

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// A start reads the sandboxes once: Scan lists them, the supervisor reads
// the list (evidence of a store restored from a backup), and Prune
// deletes from it what is not kept (RemoveAll is the two in a row).

// Inventory is what Scan found below the root.
type Inventory struct {
	jobs []scannedJob
	errs []error
}

type scannedJob struct {
	name     string
	notDir   bool // something else in a job's place (never made by us)
	attempts []uint32
	debris   []string // entries that are not canonical attempt numbers
}

// Each calls fn with every attempt sandbox of the inventory, until fn
// returns false.
func (inv *Inventory) Each(fn func(jobID string, attempt uint32) bool) {
	for _, j := range inv.jobs {
		for _, a := range j.attempts {
			if !fn(j.name, a) {
				return
			}
		}
	}
}

// Scan lists the root once, changing nothing: every job directory whose
// name is a valid job id, its attempt sandboxes and whatever else it
// holds. A start reads it as evidence of what its store may have
// forgotten (a store restored from a backup) before it prunes it.
func (r *Root) Scan() (*Inventory, error) {
	defer runtime.KeepAlive(r.f)
	jobs, err := allNames(r.fd(), r.path)
	if err != nil {
		return nil, err
	}
	inv := &Inventory{}
	for _, job := range jobs {
		if !ValidName(job) {
			continue
		}
		jobPath := filepath.Join(r.path, job)
		jobFd, err := openDir(r.fd(), job)
		switch {
		case errors.Is(err, unix.ENOENT):
			continue
		case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			inv.jobs = append(inv.jobs, scannedJob{name: job, notDir: true})
			continue
		case err != nil:
			inv.errs = append(inv.errs, openErr("open job dir", jobPath, err))
			continue
		}
		names, err := allNames(jobFd, jobPath)
		unix.Close(jobFd)
		if err != nil {
			inv.errs = append(inv.errs, err)
			continue
		}
		sj := scannedJob{name: job}
		for _, an := range names {
			if a, ok := parseAttempt(an); ok {
				sj.attempts = append(sj.attempts, a)
			} else {
				sj.debris = append(sj.debris, an)
			}
		}
		inv.jobs = append(inv.jobs, sj)
	}
	return inv, nil
}

// Prune deletes what a Scan found that keep does not keep (keep nil:
// all), the debris, the temp files of unfinished publishes in what it
// keeps, and job directories left empty. It goes on after a failure and
// returns all errors (the scan's among them).
func (r *Root) Prune(inv *Inventory, keep func(jobID string, attempt uint32) bool) error {
	defer runtime.KeepAlive(r.f)
	errs := append([]error(nil), inv.errs...)
	for _, j := range inv.jobs {
		if err := r.pruneJob(j, keep); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Root) pruneJob(j scannedJob, keep func(string, uint32) bool) error {
	jobPath := filepath.Join(r.path, j.name)
	if j.notDir {
		// Drop the entry itself, never what a symlink points at.
		return removeTree(r.fd(), j.name, r.dev, jobPath)
	}
	var drop, kept []string
	for _, a := range j.attempts {
		if keep != nil && keep(j.name, a) {
			kept = append(kept, attemptName(a))
		} else {
			drop = append(drop, attemptName(a))
		}
	}
	drop = append(drop, j.debris...)
	jobFd, err := openDir(r.fd(), j.name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return openErr("open job dir", jobPath, err)
	}
	defer unix.Close(jobFd)
	var errs []error
	for _, an := range drop {
		if err := removeTree(jobFd, an, r.dev, filepath.Join(jobPath, an)); err != nil {
			errs = append(errs, err)
		}
	}
	// A kept sandbox (an accepted certificate, or a job's evidence) may
	// hold the temp file of a publish its process did not live to
	// finish: a start runs alone on the home, so no publish is in
	// flight, and a temp file is never a certificate.
	for _, an := range kept {
		if err := removeTemps(jobFd, an, r.dev, filepath.Join(jobPath, an), MaxDepth); err != nil {
			errs = append(errs, err)
		}
	}
	if len(kept) == 0 && len(errs) == 0 {
		if err := rmdirIfEmpty(r.fd(), j.name); err != nil {
			errs = append(errs, fmt.Errorf("artifacts: rmdir %s: %w", jobPath, err))
		}
	}
	return errors.Join(errs...)
}

// removeTemps deletes the temp files (tmpPrefix) below the directory
// name of dirfd, down to depth levels: where an artifact's publish
// writes them. Nothing else is touched, and no symlink is followed.
func removeTemps(dirfd int, name string, dev uint64, display string, depth int) error {
	fd, err := openDir(dirfd, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return openErr("open sandbox dir", display, err)
	}
	defer unix.Close(fd)
	names, err := allNames(fd, display)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		path := filepath.Join(display, n)
		if strings.HasPrefix(n, tmpPrefix) {
			if err := removeTree(fd, n, dev, path); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		var st unix.Stat_t
		if depth <= 1 || unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Dev != dev {
			continue
		}
		if err := removeTemps(fd, n, dev, path, depth-1); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
