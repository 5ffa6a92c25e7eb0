package worker

import "github.com/cyberia-to/cyber-supervisor/protocol"

// Backend is the backend name the worker reports.
const Backend = "nox-worker"

// capabilities is what this process itself can honestly enforce, with
// the profiles it is configured to offer (both, v2 first, by default): the
// reduction budget (the VM counts it), artifact bytes (publication is
// bounded while writing) and cancellation (the VM polls its context).
// Wall time and memory are not listed: only the host around the process
// can enforce them, and the supervisor adds them to what it advertises
// when its probe says it can.
func (w *Worker) capabilities() protocol.Capabilities {
	return protocol.Capabilities{
		Backend:        Backend,
		BackendVersion: w.cfg.Version,
		Contracts:      []string{protocol.ContractV1},
		VM:             "nox",
		ProofKinds:     append([]string(nil), w.cfg.Profiles...),
		Operations:     []protocol.Operation{protocol.OpExecute, protocol.OpProve, protocol.OpVerify},
		Limits: protocol.EnforcedLimits{
			Reductions:    true,
			ArtifactBytes: true,
			Cancellation:  true,
		},
	}
}

// admissionCaps are the capabilities a job is re-admitted against: the
// worker's own plus wall time and memory, which the host enforces. The
// supervisor admitted the job against its probe of the host before
// dispatch; refusing those limits here would refuse every job that asks for
// them, and accepting them claims nothing about this process.
func (w *Worker) admissionCaps() protocol.Capabilities {
	c := w.capabilities()
	c.Limits.WallTime = true
	c.Limits.Memory = true
	return c
}

// descriptor names this worker for placement.
func (w *Worker) descriptor() protocol.WorkerDescriptor {
	return protocol.WorkerDescriptor{
		Machine:      protocol.MachineNox,
		Environment:  protocol.EnvPublicStateless,
		ProofProfile: protocol.ProfilePublicTrace,
		Network:      w.cfg.Network,
		Executor: protocol.Executor{
			Warrior:  protocol.WarriorNoxWorker,
			Version:  w.cfg.Version,
			Backend:  protocol.BackendIsolatedProcess,
			WorkerID: w.cfg.WorkerID,
			DeviceID: w.cfg.DeviceID,
			BootID:   w.cfg.BootID,
		},
		MaxArgumentBytes: w.cfg.MaxArgumentBytes,
	}
}
