package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

func newProgCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prog",
		Short: "Installed nox programs that call host acts: install, upgrade, list, show, pause, resume, retire",
		Long: `A prog is a nox program installed in the host-act environment: when its
reduction reaches call (pattern 16) with an act's tag, the invocation
suspends on an operation that goes through prepare, dispatch and outcome
(docs/fencing.md); the outcome becomes the call's witness. Lifecycle:
installed, active, paused, retiring, retired. An upgrade makes a new
program the prog's next revision; every invocation runs the revision it
was started at. IDs may be given as unique prefixes of at least 6 hex
digits.`,
		GroupID: groupFencing,
		Args:    noArgs("prog"),
		RunE: func(*cobra.Command, []string) error {
			return usagef("prog needs a subcommand: install, upgrade, list, show, pause, resume or retire")
		},
	}
	var acts string
	stepLimit := newIntRange(1, 1<<62)
	maxInFlight := newIntRange(1, 1<<30)
	install := &cobra.Command{
		Use:   "install FILE --acts emit [--step-limit N] [--max-inflight N]",
		Short: "Install a .nox file or a ProgramBundle and print the prog's id",
		Long: `Install a nox program (a .nox file, or a ProgramBundle .json) with the
acts it requests (by name or tag: a request, never a grant; the current
grant must give them), a step limit per invocation (default 1048576: VM
steps and the nox budget of each run) and the most invocations live at
once (default 64). Prints the prog's id. The same program with the same
settings again answers the installed prog.`,
		Args: exactArgs(1, "prog install takes one argument, the program FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			bundle, err := readBundle(args[0])
			if err != nil {
				return a.report("prog install", nil, err, nil)
			}
			return a.withFence(cmd.Context(), "prog install", func(f *fenceTarget) (any, error) {
				return f.InstallProg(cmd.Context(), api.ProgBody{Bundle: json.RawMessage(bundle), Acts: splitActs(acts),
					StepLimit: uint64(stepLimit.or(0)), MaxInFlight: uint64(maxInFlight.or(0))})
			}, func(r any) { fmt.Fprintln(a.stdout, r.(*api.ProgReply).Prog.ID) })
		},
	}
	install.Flags().StringVar(&acts, "acts", "", "the acts the prog may call, by name or tag, comma-separated")
	install.Flags().Var(stepLimit, "step-limit", "VM steps per invocation (default 1048576)")
	install.Flags().Var(maxInFlight, "max-inflight", "invocations live at once (default 64)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the installed progs",
		Args:  noArgs("prog list"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withFence(cmd.Context(), "prog list", func(f *fenceTarget) (any, error) {
				return f.Progs(cmd.Context())
			}, func(r any) { printProgs(a.stdout, r.([]*apitypes.Prog)) })
		},
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one prog with its revisions",
		Args:  exactArgs(1, "prog show takes one argument, the prog's ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withFence(cmd.Context(), "prog show", func(f *fenceTarget) (any, error) {
				id, err := f.progID(cmd.Context(), args[0])
				if err != nil {
					return nil, err
				}
				// The revisions' list ends with the current one: the prog.
				revs, err := f.ProgRevisions(cmd.Context(), id)
				if err != nil {
					return nil, err
				}
				return &progView{Prog: revs[len(revs)-1], Revisions: revs}, nil
			}, func(r any) { printProg(a.stdout, r.(*progView)) })
		},
	}
	move := func(action, short string) *cobra.Command {
		return &cobra.Command{
			Use:   action + " ID",
			Short: short,
			Args:  exactArgs(1, "prog "+action+" takes one argument, the prog's ID"),
			RunE: func(cmd *cobra.Command, args []string) error {
				return a.withFence(cmd.Context(), "prog "+action, func(f *fenceTarget) (any, error) {
					id, err := f.progID(cmd.Context(), args[0])
					if err != nil {
						return nil, err
					}
					switch action {
					case "pause":
						return f.PauseProg(cmd.Context(), id)
					case "resume":
						return f.ResumeProg(cmd.Context(), id)
					}
					return f.RetireProg(cmd.Context(), id)
				}, func(r any) { fmt.Fprintf(a.stdout, "%s %s\n", r.(*apitypes.Prog).ID, r.(*apitypes.Prog).State) })
			},
		}
	}
	cmd.AddCommand(install, newProgUpgradeCmd(a), list, show,
		move("pause", "Pause a prog: its invocations are not run or dispatched (outcomes are still taken)"),
		move("resume", "Make a paused prog active again (needs its acts in the grant)"),
		move("retire", "Retire a prog that has no live invocation"))
	return cmd
}

func actNames(tags []uint64) string {
	names := make([]string, len(tags))
	for i, t := range tags {
		names[i] = actName(t)
	}
	return strings.Join(names, ",")
}

func printProgs(w io.Writer, ps []*apitypes.Prog) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tACTS\tSTEP LIMIT\tMAX IN FLIGHT\tNAME")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", shortID(p.ID), p.State, actNames(p.Acts), p.StepLimit, p.MaxInFlight, p.Name)
	}
	tw.Flush()
}

// progView is what prog show prints: the prog (its current revision)
// and every revision, the first one first.
type progView struct {
	*apitypes.Prog
	Revisions []*apitypes.Prog `json:"revisions"`
}

func printProg(w io.Writer, v *progView) {
	p := v.Prog
	fmt.Fprintf(w, "prog          %s\nstate         %s\nrevision      %d\nprogram       %s (%s)\nacts          %s\nstep limit    %d\nmax in flight %d\ninstalled     %s\n",
		p.ID, p.State, p.Revision, p.Particle, p.Name, actNames(p.Acts), p.StepLimit, p.MaxInFlight, p.Created.Format("2006-01-02 15:04:05Z07:00"))
	if len(v.Revisions) < 2 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tPROGRAM\tACTS\tSTEP LIMIT\tMAX IN FLIGHT\tNAME")
	for _, r := range v.Revisions {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\n", r.Revision, shortID(r.Particle.String()), actNames(r.Acts), r.StepLimit, r.MaxInFlight, r.Name)
	}
	tw.Flush()
}
