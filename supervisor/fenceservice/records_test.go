package fenceservice

import (
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The store's fencing records and the engine's views with every field
// set, as convert_test.go converts them. Each value differs from its
// neighbours' so that a conversion reading the wrong field shows.
var (
	r0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	r1 = r0.Add(1500 * time.Millisecond)
	r2 = r0.Add(3 * time.Second)

	recNeuron   = neuron.ID{0x21, 0x22}
	recKey      = neuron.PublicKey{0x02, 0x33}
	recPolicy   = neuron.Particle{0x44}
	recParticle = neuron.Particle{0x55}
	recWorker   = protocol.WorkerDescriptor{Machine: protocol.MachineNox, Environment: protocol.EnvHostAct,
		ProofProfile: protocol.ProfileNone, Network: "devnet",
		Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: "0.9.1", Backend: protocol.BackendEmbeddedSync,
			WorkerID: "w7", DeviceID: "d7", BootID: "b7"},
		MaxArgumentBytes: 4096, Acts: []uint64{3, 9}}

	recRoot = &store.Root{Neuron: recNeuron, PublicKey: recKey, Profile: neuron.Profile, Network: "devnet", Policy: recPolicy,
		Epoch: 4, Generation: 6, Worker: &recWorker, Updated: r1, Records: store.RecordsAuthenticated, Signature: store.Hex{0xa1, 0xa2}}
	recGrant = &store.Grant{Neuron: recNeuron, Network: "devnet", Policy: recPolicy, Epoch: 4, Revision: 8, Enabled: true,
		Acts: store.U64s{3, 9}, Progs: []string{"pa", "pb"}, Created: r0, Signature: store.Hex{0xb1}}
	recProg = &store.Prog{ID: "pa", Neuron: recNeuron, Revision: 2, Environment: protocol.EnvHostAct, Program: []byte{0x0c, 0x0d},
		Particle: recParticle, Name: "emit.nox", State: store.ProgPaused, StepLimit: 5000, MaxInFlight: 3,
		Acts: store.U64s{9}, Created: r0, Updated: r2}
	recInvocation = &store.Invocation{ID: "ia", Seq: 12, Neuron: recNeuron, Network: "devnet", Prog: "pa", ProgRevision: 2,
		Inputs: store.U64s{4, 5}, Epoch: 4, Status: store.InvocationFailed, Parent: "ip", Limit: 900, Charged: 300,
		Delegated: 200, Held: 100, Ordinal: 7, Pending: "oa", Result: []byte{0x1e}, Output: store.U64s{30},
		Error: protocol.Errorf(protocol.CodeInternalError, "the act failed"), Created: r0, Updated: r2}
	recOperation = &store.Operation{ID: "oa", Neuron: recNeuron, Network: "devnet", Prog: "pa", Invocation: "ia", Ordinal: 7,
		Tag: 9, Argument: []byte{0x2f}, Policy: recPolicy, Epoch: 4, Stage: store.StageOutcome, Attempt: 2, Created: r0, Updated: r1}
	recAttempt = &store.ActAttempt{Operation: "oa", N: 2, Neuron: recNeuron, Network: "devnet", Prog: "pa", Invocation: "ia",
		Tag: 9, OpDigest: store.Hex{0xc1}, Executor: store.ExecutorWorker, Worker: &recWorker, Generation: 6, Policy: recPolicy,
		Epoch: 4, Created: r1, Authorization: store.Hex{0xc2}}
	recClaim   = &store.Claim{Operation: "oa", Attempt: 2, Generation: 6, Worker: recWorker, Created: r1, Signature: store.Hex{0xd1}}
	recOutcome = &store.Outcome{Operation: "oa", Attempt: 2, Kind: store.OutcomeFailed, Value: []byte{0x3a}, Message: "refused",
		Source: "reconcile", Recorded: r2}
	recReservation = &store.Reservation{Invocation: "ia", Steps: 150, Base: 300, Boot: "b7", Created: r1}

	recOperationView = fencing.OperationView{Operation: recOperation, StageName: recOperation.Stage.String(),
		Attempts: []fencing.AttemptView{
			{ActAttempt: recAttempt, Claim: recClaim, Outcome: recOutcome, Unknown: true},
			{ActAttempt: &store.ActAttempt{Operation: "oa", N: 3, Executor: store.ExecutorManual, Created: r2}, Unknown: true},
		}}
	recInvocationView = &fencing.InvocationView{Invocation: recInvocation, Archived: true, Reservation: recReservation,
		Operations: []fencing.OperationView{recOperationView}, Children: []string{"ic"}, Idle: true}
)
