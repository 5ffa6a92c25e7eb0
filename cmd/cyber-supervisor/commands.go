package main

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandGroups is the one place commands are registered: each entry
// builds one top-level command (with its subcommands) from its own file.
// See the package comment (main.go) for how to add one.
var commandGroups = []func(*app) *cobra.Command{
	newServeCmd,
	newRunCmd,
	newSubmitCmd,
	newStatusCmd,
	newListCmd,
	newEventsCmd,
	newResultCmd,
	newCancelCmd,
	newResolveCmd,
	newGCCmd,
	newDrainCmd,
	newCapabilitiesCmd,
	newHostsCmd,
	newDashboardCmd,
	newNeuronCmd,
	newGrantCmd,
	newPlacementCmd,
	newProgCmd,
	newInvokeCmd,
	newInvocationCmd,
	newOperationCmd,
	newStoreCmd,
	newVersionCmd,
	newCompletionCmd,
}

// Help groups, in the order help lists them.
const (
	groupDaemon  = "daemon"
	groupJobs    = "jobs"
	groupFencing = "fencing"
	groupHost    = "host"
)

func newRootCmd(a *app) *cobra.Command {
	var version bool
	root := &cobra.Command{
		Use:   "cyber-supervisor",
		Short: "Run nox jobs in isolated workers and verify what they produce",
		Long: `cyber-supervisor runs jobs that execute, prove or verify nox programs in
jailed nox-worker processes (cgroups, namespaces, seccomp, Landlock),
verifies every result itself and accepts each job at most once, durably.

serve runs the daemon; run executes one job with the embedded store (or
through the daemon when one owns the home); the job commands talk to a
running daemon over its unix socket; gc, store and the commands of the
neuron, progs and acts go through the daemon when one owns the home, else
work on the home directly.

The home is --home, then $CYBER_SUPERVISOR_HOME, then
/var/lib/cyber-supervisor for root ($XDG_STATE_HOME/cyber-supervisor, else
~/.local/state/cyber-supervisor, otherwise).

Exit status: 0 ok, 1 failed, 2 usage or invalid input, 3 unsupported,
4 busy or unavailable, 5 proof, claim or admission rejected, 6 the store is
damaged (nothing was started; see store check), 130 interrupted by a
signal (SIGINT, SIGTERM or SIGHUP: run cancels its job; a command that
was waiting stops waiting and says what goes on).`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		Args:              cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if version {
				return a.reportVersion()
			}
			return usagef("a command is required (see cyber-supervisor --help)")
		},
	}
	// --version is the version command (its envelope with --format json),
	// not cobra's template, which prints text whatever the format.
	root.Flags().BoolVarP(&version, "version", "v", false, "print the module version and VCS revision of this build (as the version command)")
	root.SetHelpCommand(newHelpCmd())
	a.jsonHelp(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.home, "home", "", "the supervisor's home: store, sandboxes, socket (default: $CYBER_SUPERVISOR_HOME, then a per-user directory)")
	pf.Var(a.format, "format", "output: human, or json (one cyber/cli/v1 envelope on stdout)")
	pf.Var(a.logLevel, "log-level", "log level: debug, info, warn or error (default: info for serve, warn otherwise)")
	pf.Var(a.logFormat, "log-format", "log format on stderr: text or json")
	root.AddGroup(
		&cobra.Group{ID: groupDaemon, Title: "Daemon and one-shot runs:"},
		&cobra.Group{ID: groupJobs, Title: "Jobs (through the daemon):"},
		&cobra.Group{ID: groupFencing, Title: "Neuron, progs and acts (through the daemon, or on the home):"},
		&cobra.Group{ID: groupHost, Title: "Host and build:"},
	)
	root.SetHelpCommandGroupID(groupHost)
	root.CompletionOptions.DisableDefaultCmd = true
	for _, build := range commandGroups {
		root.AddCommand(build(a))
	}
	setExamples(root)
	registerIDCompletions(a, root)
	return root
}

// prepareFor does for args what cobra leaves undone, only when args
// need it (walking every command costs ~0.4 ms of each start, which a
// one-shot run does not spend):
//   - with -h or --help among them, every command's help flag is defined
//     before cobra looks for the command, so that "-h run" and "--help
//     store check" show that command's help (cobra defines it only on the
//     command it found, and until then takes "run" for the value of a flag
//     it does not know);
//   - for a shell's completion request, every closed set of words (--op,
//     --format, --state, ...) completes to its words.
func prepareFor(root *cobra.Command, args []string) {
	help := slices.Contains(args, "-h") || slices.Contains(args, "--help")
	complete := len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
	if !help && !complete {
		return
	}
	var prepare func(*cobra.Command)
	prepare = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		if complete {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if e, ok := f.Value.(*enumValue); ok {
					// An inherited flag is registered already: cobra says so.
					_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(e.allowed, cobra.ShellCompDirectiveNoFileComp))
				}
			})
		}
		for _, sub := range c.Commands() {
			prepare(sub)
		}
	}
	prepare(root)
}
