package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

func newStoreRestoreCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE",
		Short: "Put a backup in place of the home's store (the daemon stopped)",
		Long: `Put the store file FILE (a backup) in place of the home's store, while no
daemon runs. FILE is checked first, as store check --file does (and its
signatures with the key of the home's vault, when it holds one): a file
with problems is refused (exit 1, each listed), one too damaged to read
is exit 6, and nothing changes. The current store file is kept beside it
(supervisor.db.replaced-TIME), nothing is deleted.

A restored store has forgotten whatever happened after the backup. The
home is marked so that the next start (serve, run) fences it: every
operation and job attempt that may have moved on since the backup is
unknown until its owner reconciles it, and is never run again by itself
(docs/store.md, "Recovering"). A daemon that owns the home is exit 4.`,
		Args: exactArgs(1, "store restore takes one argument, the backup FILE to put in place"),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := a.restoreStore(args[0])
			return a.report("store restore", rep, err, func() {
				aside := "there was no store file"
				if rep.KeptAside != "" {
					aside = "the previous one is kept as " + rep.KeptAside
				}
				fmt.Fprintf(a.stdout, "%s: restored from %s (%d jobs, %d records); %s\n", rep.Store, rep.From, rep.Jobs, rep.Records, aside)
				fmt.Fprintln(a.stdout, "the next start fences it: what may have moved on since the backup is unknown until reconciled (docs/store.md, Recovering)")
			})
		},
	}
}

// restoreStore puts the backup file in place and says what it did.
func (a *app) restoreStore(file string) (*apitypes.RestoreReport, error) {
	from, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return nil, err
	}
	if from == supervisor.StorePath(home) {
		return nil, usagef("store restore %s: that is the home's store itself: name a backup", from)
	}
	if _, derr := a.dialDaemon(); derr == nil {
		// Not retryable: asking again changes nothing until the daemon
		// is stopped.
		return nil, &protocol.Error{Code: protocol.CodeBusy,
			Message: fmt.Sprintf("a daemon owns %s: stop it first (a store is restored only while no supervisor runs)", home)}
	}
	if err := bolt.Exists(from); err != nil {
		return nil, usagef("store restore %s: %v", from, err)
	}
	var key bolt.Verifier
	v := neuron.OpenVault(neuron.VaultDir(home))
	if v.HasKey() {
		if k, kerr := v.Load(); kerr == nil {
			key = k
		}
	}
	chk, err := bolt.CheckFileTrusting(from, 200*time.Millisecond, key)
	if err != nil {
		return nil, err
	}
	checkAgainstVault(v, chk)
	if len(chk.Problems) > 0 {
		if !a.json() {
			v := api.CheckReportOf(chk)
			printCheck(a.stderr, &v)
		}
		return nil, protocol.Errorf(protocol.CodeStoreProblems, "store restore %s: the file has %d problems (the first: %s); nothing was changed", from, len(chk.Problems), chk.Problems[0])
	}
	if err := os.MkdirAll(supervisor.StoreDir(home), 0o700); err != nil {
		return nil, err
	}
	aside, err := bolt.InstallStore(supervisor.StoreDir(home), from, func() error { return supervisor.MarkRestored(home, from) })
	if err != nil {
		return nil, err
	}
	return &apitypes.RestoreReport{From: from, Store: supervisor.StorePath(home), KeptAside: aside, Backup: api.BackupMarkOf(chk.Backup),
		Jobs: chk.Jobs, Records: chk.Records}, nil
}
