package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// The store commands work through the daemon when one owns the home (it
// holds the file's lock), and on the file directly otherwise.

func newStoreCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Check, back up or restore the home's store",
		Long: `Check or back up the home's store (<home>/store/supervisor.db). Both work
while the daemon runs (through it) and without one (on the file, under a
shared lock). Restore puts a backup in place while no daemon runs; the
next start fences it. See docs/store.md for what is checked and how to
recover a damaged store. A daemon whose job store is on etcd checks and
copies the home's own store beside it (neuron, grants, progs, acts) and
says so: the jobs are etcd's to back up (docs/cluster.md).`,
		GroupID: groupHost,
		Args:    noArgs("store"),
		RunE: func(*cobra.Command, []string) error {
			return usagef("store needs a subcommand: check, backup or restore")
		},
	}
	cmd.AddCommand(newStoreCheckCmd(a), newStoreBackupCmd(a), newStoreRestoreCmd(a))
	return cmd
}

// localStore is the home's store file, when no daemon owns it.
func (a *app) localStore() (string, error) {
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return "", err
	}
	return supervisor.StorePath(home), nil
}

// checkHomeOffline checks the home's store file while no daemon owns it,
// verifying its signed records with the key in the home's vault when it
// holds one (a vault it cannot read is named in the report).
func (a *app) checkHomeOffline() (*bolt.CheckReport, error) {
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return nil, err
	}
	var (
		key bolt.Verifier
		why string
	)
	v := neuron.OpenVault(neuron.VaultDir(home))
	if v.HasKey() {
		k, kerr := v.Load()
		if kerr != nil {
			why = "not checked (" + kerr.Error() + ")"
		} else {
			key = k
		}
	}
	rep, err := bolt.CheckFileTrusting(supervisor.StorePath(home), 200*time.Millisecond, key)
	if err == nil && why != "" {
		rep.Signatures = why
	}
	if err == nil {
		checkAgainstVault(v, rep)
	}
	return rep, err
}

// checkAgainstVault adds the problem of a store whose records have no
// authentication tags (a store before schema 7) checked for a home whose
// vault says its neuron's records are authenticated: its root was put
// back, or it is a backup of before the upgrade (docs/fencing.md,
// "Authenticated records"). A daemon refuses to start on it.
func checkAgainstVault(v *neuron.Vault, rep *bolt.CheckReport) {
	if rep.Unauthenticated == 0 {
		return
	}
	if marked, err := v.RecordsAuthenticated(); err != nil || !marked {
		return
	}
	rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v: %d records have no authentication tag, and the vault says this neuron's records are authenticated (%s/%s; a backup of before schema 7 that you trust is started on after removing that file)",
		store.RecordName([]byte("neuron"), []byte("root")), store.ErrRootPutBack, rep.Unauthenticated, v.Dir(), neuron.RecordsMark))
}

func newStoreCheckCmd(a *app) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the store: bbolt's check, every record, the invariants",
		Long: `Check the store: bbolt's consistency check, every record's seal and
decoding, and the invariants across records (every job has its spec, the
accepted index, the accepted job and its attempt agree, the queue and the
submitted index agree with the jobs, ...). It never writes. The records
of dispatch and fencing are verified with the neuron's key, that of the
home's vault (through the daemon, or read from the vault when no daemon
runs): every signature, and every record's authentication tag (a record
altered without the vault is named).

--file checks another store file (a backup) instead of the home's,
without verifying signatures or tags.

Exit status: 0 sound, 1 problems found (each is listed), 6 the file is too
damaged to read (the message names the page or record), 4 a daemon owns
the file but does not answer.`,
		Args: noArgs("store check"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var (
				rep *apitypes.CheckReport
				err error
			)
			if file == "" {
				if dm, derr := a.dialDaemon(); derr == nil {
					rep, err = dm.CheckStore(cmd.Context())
					err = dm.err(err)
				} else {
					rep, err = checkReport(a.checkHomeOffline())
				}
			} else if file, err = filepath.Abs(file); err == nil {
				rep, err = checkReport(bolt.CheckFile(file, 200*time.Millisecond))
			}
			if err != nil {
				return a.report("store check", nil, err, nil)
			}
			if err := a.report("store check", rep, nil, func() { printCheck(a.stdout, rep) }); err != nil {
				return err
			}
			if len(rep.Problems) > 0 {
				return exitStatus(protocol.ExitFailed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "check this store file instead of the home's")
	return cmd
}

// checkReport is a store check's report as the API answers it.
func checkReport(rep *bolt.CheckReport, err error) (*apitypes.CheckReport, error) {
	if err != nil {
		return nil, err
	}
	v := api.CheckReportOf(rep)
	return &v, nil
}

func printCheck(w io.Writer, rep *apitypes.CheckReport) {
	fmt.Fprintf(w, "%s: schema %d, %d pages of %d bytes, %d records\n", rep.File, rep.Schema, rep.Pages, rep.PageSize, rep.Records)
	fmt.Fprintf(w, "%d jobs (%d queued), %d attempts, %d events, %d tombstones\n", rep.Jobs, rep.Queued, rep.Attempts, rep.Events, rep.Tombstones)
	fmt.Fprintf(w, "%d fencing records, signatures %s\n", rep.FencingRecords, rep.Signatures)
	if rep.UnauthenticatedRecords > 0 {
		fmt.Fprintf(w, "%d fencing records written before schema 7 have no authentication tag: the next start with the neuron's key authenticates them\n", rep.UnauthenticatedRecords)
	}
	if b := rep.Backup; b != nil {
		fmt.Fprintf(w, "a backup taken at %s (boot %d): a start on it fences it\n", b.Taken.Format(time.RFC3339), b.Boots)
	}
	if f := rep.Fence; f != nil {
		fmt.Fprintf(w, "restored from a backup and fenced at %s (restore %d): invocations up to seq %d act only through reconciliation\n",
			f.At.Format(time.RFC3339), f.Restores, f.Invocations)
	}
	if rep.Note != "" {
		fmt.Fprintf(w, "note: %s\n", rep.Note)
	}
	if len(rep.Problems) == 0 {
		fmt.Fprintln(w, "no problems")
		return
	}
	fmt.Fprintf(w, "%d problems:\n", len(rep.Problems))
	for _, p := range rep.Problems {
		fmt.Fprintln(w, "  "+p)
	}
}

func newStoreBackupCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the store to FILE",
		Long: `Write a consistent copy of the store, as of one read transaction, to FILE
(through the daemon while one runs, from the file otherwise). The copy is
written beside FILE, synced, marked as a backup (a start on it, however it
is put back, fences it) and checked as a store before it takes FILE's
name; an existing FILE is never replaced.`,
		Args: exactArgs(1, "store backup takes one argument, the FILE to write"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dst, err := filepath.Abs(args[0])
			if err != nil {
				return a.report("store backup", nil, err, nil)
			}
			if err := checkBackupTarget(dst); err != nil {
				return a.report("store backup", nil, err, nil)
			}
			var (
				copy func(io.Writer) (int64, error)
				note string
			)
			if dm, derr := a.dialDaemon(); derr == nil {
				copy = func(w io.Writer) (int64, error) {
					n, nt, err := dm.BackupStoreNoting(cmd.Context(), w)
					note = nt
					return n, dm.err(err)
				}
			} else {
				src, err := a.localStore()
				if err != nil {
					return a.report("store backup", nil, err, nil)
				}
				copy = func(w io.Writer) (int64, error) { return bolt.BackupFile(src, w) }
			}
			rep, err := checkReport(bolt.WriteBackup(dst, copy))
			if errors.Is(err, os.ErrExist) {
				err = backupTargetExists(dst) // made meanwhile
			}
			if rep != nil {
				rep.Note = note
			}
			return a.report("store backup", rep, err, func() {
				fmt.Fprintf(a.stdout, "%s: %d jobs, %d records, checked\n", rep.File, rep.Jobs, rep.Records)
				if rep.Note != "" {
					fmt.Fprintf(a.stdout, "note: %s\n", rep.Note)
				}
			})
		},
	}
}

// checkBackupTarget refuses, before anything is read, a FILE that is
// there already (a backup never replaces one) or whose directory is not:
// both are the command line's to correct, exit 2.
func checkBackupTarget(dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return backupTargetExists(dst)
	}
	if st, err := os.Stat(filepath.Dir(dst)); err != nil || !st.IsDir() {
		return usagef("store backup %s: the directory %s does not exist", dst, filepath.Dir(dst))
	}
	return nil
}

func backupTargetExists(dst string) error {
	return usagef("store backup %s: the file exists, and a backup never replaces one: name a new file", dst)
}
