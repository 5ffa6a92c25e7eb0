package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

func newInvokeCmd(a *app) *cobra.Command {
	var (
		values, parent string
		wait           bool
	)
	steps := newIntRange(1, 1<<62)
	cmd := &cobra.Command{
		Use:   "invoke PROG [--input-values V,...] [--parent INVOCATION [--steps N]] [--wait]",
		Short: "Start an invocation of a prog; print its id, or its output with --wait",
		Long: `Start an invocation of an active prog on public inputs (canonical field
values). The daemon drives it through its acts; print its id. With --wait,
wait until it ends and print its output, one value per line (without a
daemon this command binds its own worker and drives it itself). An
invocation that stops on an unknown attempt says so: reconcile it
(operation reconcile). With --parent the invocation is a child of that
live invocation and runs on --steps N steps the parent delegates (by
default as many as the parent has free, at most the prog's step limit):
they count in the parent's delegated steps from then on, used or not.`,
		GroupID: groupFencing,
		Args:    exactArgs(1, "invoke takes one argument, the PROG's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if steps.set && parent == "" {
				return usagef("invoke --steps needs --parent INVOCATION: the steps are the parent's")
			}
			inputs := []uint64{}
			if values != "" {
				var err error
				if inputs, err = protocol.ParseValues(values); err != nil {
					return a.report("invoke", nil, prefixErr("--input-values", err), nil)
				}
			}
			return a.withFence(cmd.Context(), "invoke", func(f *fenceTarget) (any, error) {
				id, err := f.progID(cmd.Context(), args[0])
				if err != nil {
					return nil, err
				}
				body := api.InvokeBody{Prog: id, Inputs: apitypes.U64s(inputs), Steps: uint64(steps.or(0))}
				if parent != "" {
					if body.Parent, err = f.invocationID(cmd.Context(), parent); err != nil {
						return nil, err
					}
				}
				v, err := f.invoke(cmd.Context(), body, wait)
				if err != nil {
					return nil, err
				}
				if wait && v.Status != string(store.InvocationCompleted) {
					return nil, invocationError(v)
				}
				return v, nil
			}, func(r any) {
				v := r.(*api.InvocationReply)
				if !wait {
					fmt.Fprintln(a.stdout, v.ID)
					return
				}
				for _, o := range v.Output {
					fmt.Fprintln(a.stdout, o)
				}
			})
		},
	}
	cmd.Flags().StringVar(&values, "input-values", "", "public inputs V1,V2,... (canonical field values)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the invocation to end and print its output")
	cmd.Flags().StringVar(&parent, "parent", "", "make it a child of this live invocation (an id or a unique prefix)")
	cmd.Flags().Var(steps, "steps", "the steps the parent delegates (default: its free steps, at most the prog's step limit)")
	return cmd
}

// invocationError is how an ended invocation that did not complete fails
// the command.
func invocationError(v *api.InvocationReply) error {
	if v.Error != nil {
		return &protocol.Error{Code: v.Error.Code, Message: fmt.Sprintf("invocation %s %s: %s", v.ID, v.Status, v.Error.Message), Retryable: v.Error.Retryable}
	}
	return protocol.Errorf(protocol.CodeExecutionFailed, "invocation %s %s", v.ID, v.Status)
}

func newInvocationCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invocation",
		Short: "Runs of progs: list, show, cancel, archive, rebind",
		Long: `An invocation is one run of a prog. cancel ends a live one and every live
one below it (its children, theirs), all or none (refused while an
attempt of any of them has an unknown outcome: reconcile it first); archive
removes an ended one from the list (its operations stay); rebind moves
one admitted under an older epoch to the current one (refused while an
operation is proposed or attempted, or a reservation is open). IDs may be
given as unique prefixes of at least 6 hex digits.`,
		GroupID: groupFencing,
		Args:    noArgs("invocation"),
		RunE: func(*cobra.Command, []string) error {
			return usagef("invocation needs a subcommand: list, show, cancel, archive or rebind")
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the invocations (not archived)",
		Args:  noArgs("invocation list"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withFence(cmd.Context(), "invocation list", func(f *fenceTarget) (any, error) {
				return f.Invocations(cmd.Context())
			}, func(r any) { printInvocations(a.stdout, r.([]*apitypes.Invocation)) })
		},
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show an invocation with its operations, attempts, claims and outcomes",
		Args:  exactArgs(1, "invocation show takes one argument, the invocation's ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withFence(cmd.Context(), "invocation show", func(f *fenceTarget) (any, error) {
				id, err := f.invocationID(cmd.Context(), args[0])
				if err != nil {
					return nil, err
				}
				return f.Invocation(cmd.Context(), id)
			}, func(r any) { printInvocation(a.stdout, r.(*api.InvocationReply)) })
		},
	}
	move := func(action, short string) *cobra.Command {
		return &cobra.Command{
			Use:   action + " ID",
			Short: short,
			Args:  exactArgs(1, "invocation "+action+" takes one argument, the invocation's ID"),
			RunE: func(cmd *cobra.Command, args []string) error {
				var id string
				return a.withFence(cmd.Context(), "invocation "+action, func(f *fenceTarget) (any, error) {
					var err error
					if id, err = f.invocationID(cmd.Context(), args[0]); err != nil {
						return nil, err
					}
					switch action {
					case "cancel":
						return f.CancelInvocation(cmd.Context(), id)
					case "archive":
						return f.ArchiveInvocation(cmd.Context(), id)
					}
					return f.RebindInvocation(cmd.Context(), id)
				}, func(any) { fmt.Fprintf(a.stdout, "%s: %s\n", id, action) })
			},
		}
	}
	cmd.AddCommand(list, show, move("cancel", "Cancel a live invocation and the live ones below it"),
		move("archive", "Archive an ended invocation"), move("rebind", "Move an invocation to the current epoch"))
	return cmd
}

func printInvocations(w io.Writer, invs []*apitypes.Invocation) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tPROG\tEPOCH\tOPERATIONS\tSTEPS")
	for _, v := range invs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d/%d\n", shortID(v.ID), v.Status, shortID(v.Prog), v.Epoch, v.Ordinal, v.Charged, v.Limit)
	}
	tw.Flush()
}

func printInvocation(w io.Writer, v *api.InvocationReply) {
	arch := ""
	if v.Archived {
		arch = " (archived)"
	}
	fmt.Fprintf(w, "invocation %s%s\nstatus     %s\nprog       %s (revision %d)\ninputs     %s\nepoch      %d\nsteps      %d charged, %d delegated, %d held, limit %d\n",
		v.ID, arch, v.Status, v.Prog, v.ProgRevision, protocol.FormatValues(v.Inputs), v.Epoch, v.Charged, v.Delegated, v.Held, v.Limit)
	if v.Parent != "" {
		fmt.Fprintf(w, "parent     %s\n", v.Parent)
	}
	for _, c := range v.Children {
		fmt.Fprintf(w, "child      %s\n", c)
	}
	switch {
	case v.Status == string(store.InvocationCompleted):
		fmt.Fprintf(w, "output     %s\n", protocol.FormatValues(v.Output))
	case v.Result != nil:
		fmt.Fprintf(w, "output     %s (stale: a newer prog revision replaced the one it ran)\n", protocol.FormatValues(v.Output))
	}
	if v.Error != nil {
		fmt.Fprintf(w, "error      %s\n", v.Error)
	}
	for _, op := range v.Operations {
		printOperation(w, op)
	}
}

func printOperation(w io.Writer, op api.OperationReply) {
	fmt.Fprintf(w, "operation  %s #%d act %s: %s\n", op.ID, op.Ordinal, actName(op.Tag), op.StageName)
	for _, at := range op.Attempts {
		claim := "no claim"
		if at.Claim != nil {
			claim = fmt.Sprintf("claimed at generation %d", at.Claim.Generation)
		}
		out := "unknown: needs reconciliation"
		if at.Outcome != nil {
			out = string(at.Outcome.Kind) + " (" + at.Outcome.Source + ")"
			if at.Outcome.Message != "" {
				out += ": " + at.Outcome.Message
			}
		}
		fmt.Fprintf(w, "  attempt %d  %s, generation %d, %s, %s\n", at.N, at.Executor, at.Generation, claim, out)
	}
}

func newOperationCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operation",
		Short: "Acts of invocations: list, take, reconcile",
		Long: `An operation is an act an invocation reached. Its attempt is recorded
before anything runs; an attempt without an outcome (a crash, an act that
panicked or could not say) is unknown and is never dispatched again: only
reconcile resolves it, once. take records a manual attempt for an
executor outside this supervisor (generation 0, no token): it is not
automatic fencing, and only reconcile resolves it.`,
		GroupID: groupFencing,
		Args:    noArgs("operation"),
		RunE: func(*cobra.Command, []string) error {
			return usagef("operation needs a subcommand: list, take or reconcile")
		},
	}
	list := &cobra.Command{
		Use:   "list [INVOCATION]",
		Short: "List operations with their attempts (of one invocation, or all)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("operation list takes at most one argument, an INVOCATION")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withFence(cmd.Context(), "operation list", func(f *fenceTarget) (any, error) {
				inv := ""
				if len(args) == 1 {
					var err error
					if inv, err = f.invocationID(cmd.Context(), args[0]); err != nil {
						return nil, err
					}
				}
				return f.Operations(cmd.Context(), inv)
			}, func(r any) {
				for _, op := range r.([]api.OperationReply) {
					printOperation(a.stdout, op)
				}
			})
		},
	}
	take := &cobra.Command{
		Use:   "take INVOCATION",
		Short: "Record a manual attempt of the invocation's pending operation",
		Args:  exactArgs(1, "operation take takes one argument, the INVOCATION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withFence(cmd.Context(), "operation take", func(f *fenceTarget) (any, error) {
				inv, err := f.invocationID(cmd.Context(), args[0])
				if err != nil {
					return nil, err
				}
				return f.Take(cmd.Context(), inv)
			}, func(r any) {
				at := r.(*apitypes.ActAttempt)
				fmt.Fprintf(a.stdout, "attempt %d of operation %s recorded (%s, generation 0): reconcile it once it is done\n", at.N, at.Operation, at.Executor)
			})
		},
	}
	var value, failed string
	attempt := newIntRange(1, 1<<31)
	rec := &cobra.Command{
		Use:   "reconcile OP --attempt N (--value V | --failed MESSAGE)",
		Short: "Record the outcome of an attempt: a value (nox text) or a failure",
		Long: `Record the outcome of an operation's attempt, once: a value (a noun in
nox text, e.g. 7 or [1 2]) or a failure message. The same outcome again
changes nothing; another one is refused (stale_state). It needs a current
grant for the prog, but not the act. The invocation then goes on.`,
		Args: exactArgs(1, "operation reconcile takes one argument, the OP's id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			hasValue, hasFailed := cmd.Flags().Changed("value"), cmd.Flags().Changed("failed")
			switch {
			case !attempt.set:
				return usagef("operation reconcile needs --attempt N")
			case hasValue == hasFailed:
				return usagef("operation reconcile needs exactly one of --value V and --failed MESSAGE")
			}
			body := api.ReconcileBody{Attempt: uint32(attempt.v)}
			if hasValue {
				body.Value = &value
			} else {
				body.Failed = &failed
			}
			return a.withFence(cmd.Context(), "operation reconcile", func(f *fenceTarget) (any, error) {
				op, err := f.operationID(cmd.Context(), args[0])
				if err != nil {
					return nil, err
				}
				return f.Reconcile(cmd.Context(), op, body)
			}, func(r any) {
				if r.(*api.ReconcileReply).Recorded {
					fmt.Fprintln(a.stdout, "recorded")
				} else {
					fmt.Fprintln(a.stdout, "already recorded: the same outcome")
				}
			})
		},
	}
	rec.Flags().Var(attempt, "attempt", "the attempt's number")
	rec.Flags().StringVar(&value, "value", "", "the outcome's value, a noun in nox text")
	rec.Flags().StringVar(&failed, "failed", "", "the outcome is a failure with this message")
	cmd.AddCommand(list, take, rec)
	return cmd
}
