package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

func newGrantCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "grant",
		Short: "What the neuron permits: show, set",
		Long: `The grant is the ward's state: whether it is enabled, which acts it gives,
and optionally which progs it is limited to, for the neuron's current
network, policy and epoch. Every dispatch checks it under the ward guard.`,
		GroupID: groupFencing,
		Args:    noArgs("grant"),
		RunE:    func(*cobra.Command, []string) error { return usagef("grant needs a subcommand: show or set") },
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the current grant",
		Args:  noArgs("grant show"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withFence(cmd.Context(), "grant show", func(f *fenceTarget) (any, error) {
				return f.Grant(cmd.Context())
			}, func(r any) { printGrant(a.stdout, r.(*apitypes.Grant)) })
		},
	}
	var (
		acts, progs string
		disabled    bool
	)
	rev := newIntRange(0, 1<<62)
	set := &cobra.Command{
		Use:   "set --revision N --acts emit,host [--progs ID,...] [--disabled]",
		Short: "Replace the grant: a CAS from revision N to N+1",
		Long: `Replace the grant: a compare-and-set from the current revision N (given
with --revision; a stale N is refused with stale_state, exit 5) to N+1,
for the neuron's current policy and epoch. Acts are named by name or by
tag (0x... or decimal). --progs limits the grant to those progs (ids or
unique prefixes); without it every prog is granted. --disabled refuses
every write until the next grant. The change is ordered entirely before
or after every dispatch (the ward guard).`,
		Args: noArgs("grant set"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !rev.set {
				return usagef("grant set needs --revision N (the current revision)")
			}
			return a.withFence(cmd.Context(), "grant set", func(f *fenceTarget) (any, error) {
				body := api.GrantBody{Revision: uint64(rev.v), Acts: splitActs(acts), Disabled: disabled}
				if cmd.Flags().Changed("progs") {
					body.Progs = []string{}
					for _, p := range strings.Split(progs, ",") {
						if p = strings.TrimSpace(p); p == "" {
							continue
						}
						id, err := f.progID(cmd.Context(), p)
						if err != nil {
							return nil, err
						}
						body.Progs = append(body.Progs, id)
					}
				}
				return f.SetGrant(cmd.Context(), body)
			}, func(r any) { printGrant(a.stdout, r.(*apitypes.Grant)) })
		},
	}
	set.Flags().Var(rev, "revision", "the current revision (the CAS's expectation)")
	set.Flags().StringVar(&acts, "acts", "", "the acts granted, by name or tag, comma-separated (none: no act)")
	set.Flags().StringVar(&progs, "progs", "", "limit the grant to these progs (ids or prefixes, comma-separated)")
	set.Flags().BoolVar(&disabled, "disabled", false, "a disabled grant: every write is refused")
	cmd.AddCommand(show, set)
	return cmd
}

func newPlacementCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "placement",
		Short: "Which worker may dispatch: show, bind, release",
		Long: `The placement is the neuron root's generation and worker descriptor.
bind and release are a CAS from the current generation N (--generation)
to N+1; a stale N is refused (stale_state, exit 5). bind places this
process's embedded host-act worker: the daemon's when a daemon owns the
home (it also binds itself at every start), otherwise this command's own,
which ends with it. Tokens of a replaced or released worker are fenced.`,
		GroupID: groupFencing,
		Args:    noArgs("placement"),
		RunE: func(*cobra.Command, []string) error {
			return usagef("placement needs a subcommand: show, bind or release")
		},
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the placement generation and worker",
		Args:  noArgs("placement show"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withFence(cmd.Context(), "placement show", func(f *fenceTarget) (any, error) {
				return f.Placement(cmd.Context())
			}, func(r any) { printRoot(a.stdout, r.(*apitypes.Root)) })
		},
	}
	move := func(bind bool) *cobra.Command {
		name := "release"
		short := "Release the worker: generation N to N+1, no worker"
		if bind {
			name, short = "bind", "Bind this process's embedded worker: generation N to N+1"
		}
		gen := newIntRange(0, 1<<62)
		c := &cobra.Command{
			Use:   name + " --generation N",
			Short: short,
			Args:  noArgs("placement " + name),
			RunE: func(cmd *cobra.Command, _ []string) error {
				if !gen.set {
					return usagef("placement %s needs --generation N (the current generation)", name)
				}
				return a.withFence(cmd.Context(), "placement "+name, func(f *fenceTarget) (any, error) {
					if bind {
						return f.Bind(cmd.Context(), uint64(gen.v))
					}
					return f.Release(cmd.Context(), uint64(gen.v))
				}, func(r any) { printRoot(a.stdout, r.(*apitypes.Root)) })
			},
		}
		c.Flags().Var(gen, "generation", "the current generation (the CAS's expectation)")
		return c
	}
	cmd.AddCommand(show, move(true), move(false))
	return cmd
}
