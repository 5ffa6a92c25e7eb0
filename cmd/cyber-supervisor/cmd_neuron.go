package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// The commands of local dispatch and fencing (docs/fencing.md) act
// through the daemon when one owns the home, directly on the home
// otherwise (fence_target.go).

// withFence runs fn on the command's target and reports its result.
// neuron init is the one command of the group that makes a new home.
func (a *app) withFence(ctx context.Context, name string, fn func(*fenceTarget) (any, error), human func(any)) error {
	f, err := a.fenceFor(name)
	if err != nil {
		return a.report(name, nil, err, nil)
	}
	defer f.done()
	res, err := fn(f)
	err = f.err(err)
	return a.report(name, res, err, func() {
		if human != nil {
			human(res)
		}
	})
}

func newNeuronCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "neuron",
		Short: "The neuron that owns this home's work: init, show, policy",
		Long: `The neuron is the subject that owns this home's work: a secp256k1 key in
<home>/vault (0700, the key file 0600; the key never leaves the
supervisor process), its id (the Hemera particle of the compressed public
key, profile cyber-secp256k1-hemera-v1), and its root: network, policy,
epoch and the placement of its worker. See docs/fencing.md.`,
		GroupID: groupFencing,
		Args:    noArgs("neuron"),
		RunE:    func(*cobra.Command, []string) error { return usagef("neuron needs a subcommand: init, show or policy") },
	}
	var network string
	initCmd := &cobra.Command{
		Use:   "init --network NAME",
		Short: "Make the neuron: its key, its root (generation 0, epoch 1) and its first grant",
		Args:  noArgs("neuron init"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if network == "" {
				return usagef("neuron init needs --network NAME")
			}
			return a.withFence(cmd.Context(), "neuron init", func(f *fenceTarget) (any, error) {
				return f.InitNeuron(cmd.Context(), network)
			}, func(r any) { printNeuron(a.stdout, r.(*api.NeuronReply)) })
		},
	}
	initCmd.Flags().StringVar(&network, "network", "", "the network the neuron is pinned to (1-128 printable ASCII)")
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the neuron, its root, its placement and its grant",
		Args:  noArgs("neuron show"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withFence(cmd.Context(), "neuron show", func(f *fenceTarget) (any, error) {
				return f.Neuron(cmd.Context())
			}, func(r any) { printNeuron(a.stdout, r.(*api.NeuronReply)) })
		},
	}
	var policy string
	epoch := newIntRange(1, 1<<62)
	pol := &cobra.Command{
		Use:   "policy --policy HEX --epoch N",
		Short: "Move the neuron to a new policy under a larger epoch",
		Long: `Move the neuron to a new policy (64 hex digits) under a strictly larger
epoch. The current grant no longer matches: set a grant for the new
policy (grant set). Invocations admitted under the old epoch wait until
they are rebound (invocation rebind); their unknown attempts can be
reconciled under the new policy without the act.`,
		Args: noArgs("neuron policy"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := neuron.ParseParticle(strings.ToLower(policy))
			if err != nil {
				return usagef("--policy: %v", err)
			}
			if !epoch.set {
				return usagef("neuron policy needs --epoch N")
			}
			return a.withFence(cmd.Context(), "neuron policy", func(f *fenceTarget) (any, error) {
				return f.ChangePolicy(cmd.Context(), p, uint64(epoch.v))
			}, func(r any) { printRoot(a.stdout, r.(*apitypes.Root)) })
		},
	}
	pol.Flags().StringVar(&policy, "policy", "", "the new policy particle, 64 hex digits")
	pol.Flags().Var(epoch, "epoch", "the new epoch: larger than the current one")
	cmd.AddCommand(initCmd, show, pol)
	return cmd
}

func printNeuron(w io.Writer, r *api.NeuronReply) {
	printRoot(w, r.Root)
	printGrant(w, r.Grant)
	fmt.Fprintf(w, "this process's worker: boot %s\n", r.Worker.Executor.BootID)
}

func printRoot(w io.Writer, r *apitypes.Root) {
	fmt.Fprintf(w, "neuron     %s (%s)\n", r.Neuron, r.Profile)
	fmt.Fprintf(w, "network    %s\n", r.Network)
	fmt.Fprintf(w, "policy     %s epoch %d\n", r.Policy, r.Epoch)
	if r.Worker == nil {
		fmt.Fprintf(w, "placement  generation %d, no worker\n", r.Generation)
		return
	}
	fmt.Fprintf(w, "placement  generation %d, worker %s boot %s (%s, %s)\n", r.Generation,
		r.Worker.Executor.WorkerID, r.Worker.Executor.BootID, r.Worker.Environment, r.Worker.Executor.Backend)
}

func printGrant(w io.Writer, g *apitypes.Grant) {
	state := "enabled"
	if !g.Enabled {
		state = "disabled"
	}
	progs := "every prog"
	if g.Progs != nil {
		progs = fmt.Sprintf("progs %v", g.Progs)
	}
	acts := make([]string, len(g.Acts))
	for i, t := range g.Acts {
		acts[i] = actName(t)
	}
	fmt.Fprintf(w, "grant      revision %d, %s, policy %s epoch %d, acts [%s], %s\n",
		g.Revision, state, shortID(g.Policy.String()), g.Epoch, strings.Join(acts, " "), progs)
}

// actName names a built-in tag, or writes it in hex.
func actName(t uint64) string {
	switch t {
	case hostact.TagEmit:
		return "emit"
	case hostact.TagHost:
		return "host"
	}
	return hostact.FormatTag(t)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
