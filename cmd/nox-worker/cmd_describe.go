package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/worker"
)

// cmdDescribe prints what the worker would tell a supervisor.
func cmdDescribe(ctx context.Context, w *worker.Worker, _ *options, pos []string) (any, humanFn, error) {
	if len(pos) != 0 {
		return nil, nil, usageError("describe takes no arguments")
	}
	caps, desc, err := w.Describe(ctx)
	if err != nil {
		return nil, nil, err
	}
	human := func(stdout, _ io.Writer) {
		ops := make([]string, len(caps.Operations))
		for i, op := range caps.Operations {
			ops[i] = string(op)
		}
		var enforced []string
		for _, l := range []struct {
			name string
			on   bool
		}{
			{"reductions", caps.Limits.Reductions}, {"wall_time", caps.Limits.WallTime},
			{"memory", caps.Limits.Memory}, {"artifact_bytes", caps.Limits.ArtifactBytes},
			{"cancellation", caps.Limits.Cancellation}, {"pids", caps.Limits.Pids}, {"cpu", caps.Limits.CPU},
		} {
			if l.on {
				enforced = append(enforced, l.name)
			}
		}
		e := desc.Executor
		fmt.Fprintf(stdout, "backend:      %s %s\n", caps.Backend, caps.BackendVersion)
		fmt.Fprintf(stdout, "contracts:    %s\n", strings.Join(caps.Contracts, ", "))
		fmt.Fprintf(stdout, "vm:           %s\n", caps.VM)
		fmt.Fprintf(stdout, "proof kinds:  %s\n", strings.Join(caps.ProofKinds, ", "))
		fmt.Fprintf(stdout, "operations:   %s\n", strings.Join(ops, ", "))
		fmt.Fprintf(stdout, "enforced:     %s (wall time and memory: by the supervisor's isolation)\n", strings.Join(enforced, ", "))
		fmt.Fprintf(stdout, "profile:      state_reads=%t secret_proofs=%t zero_knowledge=%t succinct=%t\n",
			caps.StateReads, caps.SecretProofs, caps.ZeroKnowledge, caps.Succinct)
		fmt.Fprintf(stdout, "descriptor:   machine %s, environment %s, proof %s, network %s\n",
			desc.Machine, desc.Environment, desc.ProofProfile, desc.Network)
		fmt.Fprintf(stdout, "executor:     %s %s, backend %s\n", e.Warrior, e.Version, e.Backend)
		fmt.Fprintf(stdout, "ids:          worker %s, device %s, boot %s\n", e.WorkerID, e.DeviceID, e.BootID)
	}
	return describeJSON{Capabilities: caps, Descriptor: desc}, human, nil
}
