package protocol

import (
	"slices"
	"sync/atomic"
)

// Selections of a worker descriptor.
const (
	MachineNox = "nox/1"
	// MachineNativeGo is trusted Go code run in the supervisor's own
	// process: the embedded host-act worker.
	MachineNativeGo = "native-go/1"

	EnvPublicStateless = "cyber/public-stateless/1"
	EnvHostAct         = "host-act/1"

	BackendIsolatedProcess = "isolated-process/1"
	// BackendProcess is a worker process without isolation (no hard
	// limits offered).
	BackendProcess      = "process/1"
	BackendEmbeddedSync = "embedded-sync/1"

	WarriorNoxWorker = "nox-worker"
	// WarriorCyberSupervisor is the supervisor itself, as the warrior of
	// its embedded host-act worker.
	WarriorCyberSupervisor = "cyber-supervisor"
)

// Descriptor bounds.
const (
	MaxArgumentBytesLimit = 8 << 20
	MaxActs               = 256
)

// WorkerDescriptor names exactly which worker a placement is bound to: five
// selections (machine, environment, proof profile, network, executor) plus
// the argument bound and act set. Placement compares descriptors for
// equality, so every field is narrow text or a number.
type WorkerDescriptor struct {
	Machine          string // MachineNox or MachineNativeGo
	Environment      string // EnvPublicStateless or EnvHostAct
	ProofProfile     string // ProfilePublicTrace or ProfileNone
	Network          string
	Executor         Executor
	MaxArgumentBytes uint64   // 1 .. 8 MiB
	Acts             []uint64 // act tags, strictly ascending, at most 256
}

// Executor is the implementation and instance behind a descriptor.
type Executor struct {
	Warrior  string // WarriorNoxWorker
	Version  string
	Backend  string // BackendIsolatedProcess, BackendProcess or BackendEmbeddedSync
	WorkerID string
	DeviceID string
	BootID   string
}

// Equal reports whether two descriptors select the same worker.
func (d WorkerDescriptor) Equal(o WorkerDescriptor) bool {
	return d.Machine == o.Machine && d.Environment == o.Environment &&
		d.ProofProfile == o.ProofProfile && d.Network == o.Network &&
		d.Executor == o.Executor && d.MaxArgumentBytes == o.MaxArgumentBytes &&
		slices.Equal(d.Acts, o.Acts)
}

// Validate checks the descriptor's rules. Host acts run trusted code whose
// effects no certificate covers, so the host-act environment goes with
// proof profile none/1 only.
func (d WorkerDescriptor) Validate() error {
	texts := []struct{ name, v string }{
		{"machine", d.Machine}, {"environment", d.Environment},
		{"proof_profile", d.ProofProfile}, {"network", d.Network},
		{"executor.warrior", d.Executor.Warrior}, {"executor.version", d.Executor.Version},
		{"executor.backend", d.Executor.Backend}, {"executor.worker_id", d.Executor.WorkerID},
		{"executor.device_id", d.Executor.DeviceID}, {"executor.boot_id", d.Executor.BootID},
	}
	for _, t := range texts {
		if !ValidText(t.v) {
			return Errorf(CodeInvalidJob, "descriptor: %s must be 1-128 printable ASCII", t.name)
		}
	}
	switch {
	case d.Machine != MachineNox && d.Machine != MachineNativeGo:
		return Errorf(CodeInvalidJob, "descriptor: machine must be %s or %s", MachineNox, MachineNativeGo)
	case d.Machine == MachineNativeGo && d.Environment != EnvHostAct:
		return Errorf(CodeInvalidJob, "descriptor: machine %s runs environment %s only", MachineNativeGo, EnvHostAct)
	case d.Environment != EnvPublicStateless && d.Environment != EnvHostAct:
		return Errorf(CodeInvalidJob, "descriptor: environment must be %s or %s", EnvPublicStateless, EnvHostAct)
	case d.ProofProfile != ProfilePublicTrace && d.ProofProfile != ProfileNone:
		return Errorf(CodeInvalidJob, "descriptor: proof_profile must be %s or %s", ProfilePublicTrace, ProfileNone)
	case d.Environment == EnvHostAct && d.ProofProfile != ProfileNone:
		return Errorf(CodeInvalidJob, "descriptor: environment %s requires proof_profile %s", EnvHostAct, ProfileNone)
	case d.Executor.Backend != BackendIsolatedProcess && d.Executor.Backend != BackendProcess && d.Executor.Backend != BackendEmbeddedSync:
		return Errorf(CodeInvalidJob, "descriptor: executor.backend must be %s, %s or %s", BackendIsolatedProcess, BackendProcess, BackendEmbeddedSync)
	case d.MaxArgumentBytes < 1 || d.MaxArgumentBytes > MaxArgumentBytesLimit:
		return Errorf(CodeInvalidJob, "descriptor: max_argument_bytes must be 1..%d", MaxArgumentBytesLimit)
	case len(d.Acts) > MaxActs:
		return Errorf(CodeInvalidJob, "descriptor: %d acts, at most %d", len(d.Acts), MaxActs)
	}
	for i := 1; i < len(d.Acts); i++ {
		if d.Acts[i] <= d.Acts[i-1] {
			return Errorf(CodeInvalidJob, "descriptor: acts must be strictly ascending (sorted, no duplicates)")
		}
	}
	return nil
}

type descriptorWire struct {
	Machine          string       `json:"machine"`
	Environment      string       `json:"environment"`
	ProofProfile     string       `json:"proof_profile"`
	Network          string       `json:"network"`
	Executor         executorWire `json:"executor"`
	MaxArgumentBytes decimal      `json:"max_argument_bytes"`
	Acts             []decimal    `json:"acts"`
}

type executorWire struct {
	Warrior  string `json:"warrior"`
	Version  string `json:"version"`
	Backend  string `json:"backend"`
	WorkerID string `json:"worker_id"`
	DeviceID string `json:"device_id"`
	BootID   string `json:"boot_id"`
}

var (
	descriptorKeys = []string{"machine", "environment", "proof_profile", "network", "executor", "max_argument_bytes", "acts"}
	executorKeys   = []string{"warrior", "version", "backend", "worker_id", "device_id", "boot_id"}
	descriptorTree = treeLimits{maxDepth: 8, maxValues: 2 * MaxActs}
)

// MarshalJSON writes the descriptor with a fixed key order.
func (d WorkerDescriptor) MarshalJSON() ([]byte, error) {
	return d.AppendJSON(nil)
}

// AppendJSON appends what MarshalJSON writes to dst: the records that
// embed a descriptor append it without a copy of their own.
func (d WorkerDescriptor) AppendJSON(dst []byte) ([]byte, error) {
	if c := lastDescriptor.Load(); c != nil && c.d.Equal(d) {
		return append(dst, c.b...), nil
	}
	b, err := marshalCompact(descriptorWire{
		Machine: d.Machine, Environment: d.Environment, ProofProfile: d.ProofProfile,
		Network:          d.Network,
		Executor:         executorWire(d.Executor),
		MaxArgumentBytes: decimal(d.MaxArgumentBytes),
		Acts:             decimals(nonNil(d.Acts)),
	})
	if err != nil {
		return dst, err
	}
	d.Acts = slices.Clone(d.Acts)
	lastDescriptor.Store(&descriptorEncoding{d: d, b: slices.Clone(b)})
	return append(dst, b...), nil
}

// descriptorEncoding is a descriptor and its encoding. A process encodes
// one descriptor over and over (its embedded worker's, in every attempt
// and claim record and statement): the last one is remembered.
type descriptorEncoding struct {
	d WorkerDescriptor
	b []byte
}

var lastDescriptor atomic.Pointer[descriptorEncoding]

// UnmarshalJSON reads a descriptor as ParseDescriptor does: strictly, and
// valid or not at all.
func (d *WorkerDescriptor) UnmarshalJSON(b []byte) error {
	p, err := ParseDescriptor(b)
	if err != nil {
		return err
	}
	*d = *p
	return nil
}

// ParseDescriptor reads a worker descriptor strictly (unknown and duplicate
// keys refused) and validates it.
func ParseDescriptor(b []byte) (*WorkerDescriptor, error) {
	if len(b) > MaxDescriptorBytes {
		return nil, Errorf(CodeInvalidJob, "descriptor: %d bytes, at most %d", len(b), MaxDescriptorBytes)
	}
	root, err := decodeTree(b, descriptorTree, CodeInvalidJob)
	if err != nil {
		return nil, prefixed("descriptor", err)
	}
	d, err := decodeDescriptor(reader{code: CodeInvalidJob}, root)
	if err != nil {
		return nil, prefixed("descriptor", err)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

func decodeDescriptor(r reader, root *jvalue) (*WorkerDescriptor, error) {
	o, err := r.object(root, "$")
	if err != nil {
		return nil, err
	}
	if err := o.only(descriptorKeys); err != nil {
		return nil, err
	}
	d := new(WorkerDescriptor)
	for _, f := range []struct {
		key string
		dst *string
	}{{"machine", &d.Machine}, {"environment", &d.Environment}, {"proof_profile", &d.ProofProfile}, {"network", &d.Network}} {
		if *f.dst, err = needString(r, o, f.key); err != nil {
			return nil, err
		}
	}
	ev, err := o.need("executor")
	if err != nil {
		return nil, err
	}
	eo, err := r.object(ev, o.at("executor"))
	if err != nil {
		return nil, err
	}
	if err := eo.only(executorKeys); err != nil {
		return nil, err
	}
	e := &d.Executor
	for i, dst := range []*string{&e.Warrior, &e.Version, &e.Backend, &e.WorkerID, &e.DeviceID, &e.BootID} {
		if *dst, err = needString(r, eo, executorKeys[i]); err != nil {
			return nil, err
		}
	}
	mv, err := o.need("max_argument_bytes")
	if err != nil {
		return nil, err
	}
	if d.MaxArgumentBytes, err = r.u64(mv, o.at("max_argument_bytes")); err != nil {
		return nil, err
	}
	av, err := o.need("acts")
	if err != nil {
		return nil, err
	}
	items, err := r.array(av, o.at("acts"), MaxActs)
	if err != nil {
		return nil, err
	}
	d.Acts = make([]uint64, len(items))
	for i, it := range items {
		if d.Acts[i], err = r.u64(it, index(o.at("acts"), i)); err != nil {
			return nil, err
		}
	}
	return d, nil
}
