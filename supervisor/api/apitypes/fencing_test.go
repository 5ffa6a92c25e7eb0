package apitypes

import (
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// The fencing types' fixtures, each field set (fixtures() holds them
// with the job side's). supervisor/fenceservice's golden files hold the
// same JSON as the store's records gave it before these types.
var (
	fenceNeuron = neuron.ID{0x21, 0x22}
	fencePolicy = neuron.Particle{0x44}
	fenceWorker = protocol.WorkerDescriptor{Machine: protocol.MachineNox, Environment: protocol.EnvHostAct,
		ProofProfile: protocol.ProfileNone, Network: "devnet", MaxArgumentBytes: 4096, Acts: []uint64{3, 9},
		Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: "0.9.1", Backend: protocol.BackendEmbeddedSync,
			WorkerID: "w7", DeviceID: "d7", BootID: "b7"}}
)

// generator is secp256k1's generator point, compressed: a public key
// that decodes (a root's key is checked on the way in).
var generator = neuron.PublicKey{0x02, 0x79, 0xbe, 0x66, 0x7e, 0xf9, 0xdc, 0xbb, 0xac, 0x55, 0xa0, 0x62, 0x95, 0xce, 0x87, 0x0b, 0x07,
	0x02, 0x9b, 0xfc, 0xdb, 0x2d, 0xce, 0x28, 0xd9, 0x59, 0xf2, 0x81, 0x5b, 0x16, 0xf8, 0x17, 0x98}

func fixtureInvocation() Invocation {
	return Invocation{ID: "ia", Seq: 12, Neuron: fenceNeuron, Network: "devnet", Prog: "pa", ProgRevision: 2,
		Inputs: U64s{4, 5}, Epoch: 4, Status: "failed", Parent: "ip", Limit: 900, Charged: 300, Delegated: 200, Held: 100,
		Ordinal: 7, Pending: "oa", Result: []byte{0x1e}, Output: U64s{30},
		Error: protocol.Errorf(protocol.CodeInternalError, "the act failed"), Created: t0, Updated: t2}
}

func fixtureOperation() Operation {
	return Operation{ID: "oa", Neuron: fenceNeuron, Network: "devnet", Prog: "pa", Invocation: "ia", Ordinal: 7, Tag: 9,
		Argument: []byte{0x2f}, Policy: fencePolicy, Epoch: 4, Stage: 2, Attempt: 2, Created: t0, Updated: t1}
}

func fixtureActAttempt() ActAttempt {
	w := fenceWorker
	return ActAttempt{Operation: "oa", N: 2, Neuron: fenceNeuron, Network: "devnet", Prog: "pa", Invocation: "ia", Tag: 9,
		OpDigest: Hex{0xc1}, Executor: "neuron/worker/1", Worker: &w, Generation: 6, Policy: fencePolicy, Epoch: 4,
		Created: t1, Authorization: Hex{0xc2}}
}

func fixtureOperationAttempt() OperationAttempt {
	return OperationAttempt{ActAttempt: fixtureActAttempt(),
		Claim:   &ActClaim{Operation: "oa", Attempt: 2, Generation: 6, Worker: fenceWorker, Created: t1, Signature: Hex{0xd1}},
		Outcome: &Outcome{Operation: "oa", Attempt: 2, Kind: "failed", Value: []byte{0x3a}, Message: "refused", Source: "reconcile", Recorded: t2},
		Unknown: true}
}

func fixtureOperationReply() OperationReply {
	return OperationReply{Operation: fixtureOperation(), StageName: "outcome", Attempts: []OperationAttempt{fixtureOperationAttempt()}}
}

func fencingFixtures() map[string]any {
	w := fenceWorker
	return map[string]any{
		"Root": Root{Neuron: fenceNeuron, PublicKey: generator, Profile: neuron.Profile, Network: "devnet",
			Policy: fencePolicy, Epoch: 4, Generation: 6, Worker: &w, Updated: t1, Records: "hmac-sha256/1", Signature: Hex{0xa1, 0xa2}},
		"Grant": Grant{Neuron: fenceNeuron, Network: "devnet", Policy: fencePolicy, Epoch: 4, Revision: 8, Enabled: true,
			Acts: U64s{3, 9}, Progs: []string{"pa", "pb"}, Created: t0, Signature: Hex{0xb1}},
		"Prog": Prog{ID: "pa", Neuron: fenceNeuron, Revision: 2, Environment: protocol.EnvHostAct, Program: []byte{0x0c, 0x0d},
			Particle: neuron.Particle{0x55}, Name: "emit.nox", State: "paused", StepLimit: 5000, MaxInFlight: 3, Acts: U64s{9},
			Created: t0, Updated: t2},
		"Invocation": fixtureInvocation(),
		"InvocationReply": InvocationReply{Invocation: fixtureInvocation(), Archived: true,
			Reservation: &Reservation{Invocation: "ia", Steps: 150, Base: 300, Boot: "b7", Created: t1},
			Operations:  []OperationReply{fixtureOperationReply()}, Children: []string{"ic"}, Idle: true},
		"Operation":        fixtureOperation(),
		"OperationReply":   fixtureOperationReply(),
		"ActAttempt":       fixtureActAttempt(),
		"OperationAttempt": fixtureOperationAttempt(),
		"ActClaim":         *fixtureOperationAttempt().Claim,
		"Outcome":          *fixtureOperationAttempt().Outcome,
		"Reservation":      Reservation{Invocation: "ia", Steps: 150, Base: 300, Boot: "b7", Created: t1},
		"Hex":              Hex{0x00, 0xff},
		"U64s":             U64s{0, 18446744073709551615},
	}
}
