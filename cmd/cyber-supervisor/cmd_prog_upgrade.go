package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

func newProgUpgradeCmd(a *app) *cobra.Command {
	var acts string
	rev := newIntRange(0, 1<<62)
	stepLimit := newIntRange(1, 1<<62)
	maxInFlight := newIntRange(1, 1<<30)
	cmd := &cobra.Command{
		Use:   "upgrade ID FILE --revision N [--acts emit,...] [--step-limit N] [--max-inflight N]",
		Short: "Make a program the prog's next revision: a CAS from revision N to N+1",
		Long: `Make a nox program (a .nox file, or a ProgramBundle .json) the prog's next
revision: a compare-and-set from the current revision N (given with
--revision; a stale N is refused with stale_state, exit 5) to N+1. The
prog keeps its id, state and live invocations; --acts (by name or tag;
'' for none), --step-limit and --max-inflight not given keep the current
revision's. The current grant must give every act the new revision
requests; a retiring or retired prog is not upgraded. Every invocation
runs the revision it was started at: those of the replaced revision act
no more and end as conflicts (stale_state). The same upgrade again, once
it is the current revision, answers it. Prints the prog's id and new
revision.`,
		Args: exactArgs(2, "prog upgrade takes two arguments, the prog's ID and the program FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !rev.set {
				return usagef("prog upgrade needs --revision N (the current revision)")
			}
			bundle, err := readBundle(args[1])
			if err != nil {
				return a.report("prog upgrade", nil, err, nil)
			}
			return a.withFence(cmd.Context(), "prog upgrade", func(f *fenceTarget) (any, error) {
				id, err := f.progID(cmd.Context(), args[0])
				if err != nil {
					return nil, err
				}
				body := api.UpgradeBody{Revision: uint64(rev.v), Bundle: json.RawMessage(bundle),
					StepLimit: uint64(stepLimit.or(0)), MaxInFlight: uint64(maxInFlight.or(0))}
				if cmd.Flags().Changed("acts") {
					body.Acts = splitActs(acts)
				}
				return f.UpgradeProg(cmd.Context(), id, body)
			}, func(r any) {
				p := r.(*api.ProgReply).Prog
				fmt.Fprintf(a.stdout, "%s revision %d\n", p.ID, p.Revision)
			})
		},
	}
	cmd.Flags().Var(rev, "revision", "the prog's current revision (the CAS)")
	cmd.Flags().StringVar(&acts, "acts", "", "the acts the new revision may call, by name or tag, comma-separated (default: the current revision's)")
	cmd.Flags().Var(stepLimit, "step-limit", "VM steps per invocation (default: the current revision's)")
	cmd.Flags().Var(maxInFlight, "max-inflight", "invocations live at once (default: the current revision's)")
	return cmd
}
