package protocol

// Capabilities is what a backend says it can do. Admission judges every
// job against them, so a backend must list a limit as enforced only when it
// really enforces it (the sandbox and limits packages probe that at start).
type Capabilities struct {
	Backend        string
	BackendVersion string
	Contracts      []string
	VM             string // "nox"
	ProofKinds     []string
	Operations     []Operation
	Limits         EnforcedLimits
	// The public profile has none of these; they exist so that a backend
	// states it, and Validate refuses any that is true.
	StateReads    bool
	SecretProofs  bool
	ZeroKnowledge bool
	Succinct      bool
}

// EnforcedLimits says which limits the backend enforces, not which it
// would like to.
type EnforcedLimits struct {
	Reductions    bool // the reduction budget
	WallTime      bool // a wall-clock deadline, with a kill after it
	Memory        bool // a hard memory limit (cgroup), with OOM detection
	ArtifactBytes bool // a cap on produced artifacts
	Cancellation  bool // acknowledged cancellation with a bounded deadline
	Pids          bool // a bound on the worker's process count
	CPU           bool // a CPU quota
}

type capabilitiesWire struct {
	Backend        string       `json:"backend"`
	BackendVersion string       `json:"backend_version"`
	Contracts      []string     `json:"contracts"`
	VM             string       `json:"vm"`
	ProofKinds     []string     `json:"proof_kinds"`
	Operations     []Operation  `json:"operations"`
	Limits         enforcedWire `json:"limits"`
	StateReads     bool         `json:"state_reads"`
	SecretProofs   bool         `json:"secret_proofs"`
	ZeroKnowledge  bool         `json:"zero_knowledge"`
	Succinct       bool         `json:"succinct"`
}

type enforcedWire struct {
	Reductions    bool `json:"reductions"`
	WallTime      bool `json:"wall_time"`
	Memory        bool `json:"memory"`
	ArtifactBytes bool `json:"artifact_bytes"`
	Cancellation  bool `json:"cancellation"`
	Pids          bool `json:"pids"`
	CPU           bool `json:"cpu"`
}

var enforcedKeys = []string{"reductions", "wall_time", "memory", "artifact_bytes", "cancellation", "pids", "cpu"}

// Validate checks that the capabilities are well formed and honest for
// this contract version. Failures are internal_error: capabilities come
// from the backend's own configuration and probes, never from a job.
func (c Capabilities) Validate() error {
	switch {
	case !ValidText(c.Backend):
		return Errorf(CodeInternalError, "capabilities: backend must be 1-128 printable ASCII")
	case !ValidText(c.BackendVersion):
		return Errorf(CodeInternalError, "capabilities: backend_version must be 1-128 printable ASCII")
	case c.VM != "nox":
		return Errorf(CodeInternalError, "capabilities: vm must be nox")
	case c.StateReads || c.SecretProofs || c.ZeroKnowledge || c.Succinct:
		return Errorf(CodeInternalError, "capabilities: state_reads, secret_proofs, zero_knowledge and succinct must be false in %s", ContractV1)
	}
	if err := uniqueTexts("contracts", c.Contracts); err != nil {
		return err
	}
	if err := uniqueTexts("proof_kinds", c.ProofKinds); err != nil {
		return err
	}
	seen := map[Operation]bool{}
	for _, op := range c.Operations {
		if !op.Valid() || seen[op] {
			return Errorf(CodeInternalError, "capabilities: operations must be distinct execute, prove or verify")
		}
		seen[op] = true
	}
	return nil
}

func uniqueTexts(what string, list []string) error {
	if len(list) > 64 {
		return Errorf(CodeInternalError, "capabilities: more than 64 %s", what)
	}
	seen := map[string]bool{}
	for _, s := range list {
		if !ValidText(s) || seen[s] {
			return Errorf(CodeInternalError, "capabilities: %s must be distinct 1-128 printable ASCII", what)
		}
		seen[s] = true
	}
	return nil
}

// MarshalJSON writes the capabilities with a fixed key order; lists are
// never null.
func (c Capabilities) MarshalJSON() ([]byte, error) {
	return marshalCompact(capabilitiesWire{
		Backend:        c.Backend,
		BackendVersion: c.BackendVersion,
		Contracts:      nonNilList(c.Contracts),
		VM:             c.VM,
		ProofKinds:     nonNilList(c.ProofKinds),
		Operations:     nonNilList(c.Operations),
		Limits:         enforcedWire(c.Limits),
		StateReads:     c.StateReads,
		SecretProofs:   c.SecretProofs,
		ZeroKnowledge:  c.ZeroKnowledge,
		Succinct:       c.Succinct,
	})
}

func nonNilList[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

var capabilitiesTree = treeLimits{maxDepth: 8, maxValues: 1024}

// ParseCapabilities reads capabilities as a backend reports them. Unknown
// keys are ignored (a newer backend may say more); duplicate keys, wrong
// types and invalid values are refused. Errors carry internal_error: bad
// capabilities are a broken backend, not a bad job.
func ParseCapabilities(b []byte) (*Capabilities, error) {
	const code = CodeInternalError
	if len(b) > MaxCapabilitiesBytes {
		return nil, Errorf(code, "capabilities: %d bytes, at most %d", len(b), MaxCapabilitiesBytes)
	}
	root, err := decodeTree(b, capabilitiesTree, code)
	if err != nil {
		return nil, prefixed("capabilities", err)
	}
	c, err := decodeCapabilities(reader{code: code}, root)
	if err != nil {
		return nil, prefixed("capabilities", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func decodeCapabilities(r reader, root *jvalue) (*Capabilities, error) {
	o, err := r.object(root, "$")
	if err != nil {
		return nil, err
	}
	c := new(Capabilities)
	for _, f := range []struct {
		key string
		dst *string
	}{{"backend", &c.Backend}, {"backend_version", &c.BackendVersion}, {"vm", &c.VM}} {
		if *f.dst, err = needString(r, o, f.key); err != nil {
			return nil, err
		}
	}
	if c.Contracts, err = stringList(r, o, "contracts"); err != nil {
		return nil, err
	}
	if c.ProofKinds, err = stringList(r, o, "proof_kinds"); err != nil {
		return nil, err
	}
	ops, err := stringList(r, o, "operations")
	if err != nil {
		return nil, err
	}
	for _, op := range ops {
		c.Operations = append(c.Operations, Operation(op))
	}
	lv, err := o.need("limits")
	if err != nil {
		return nil, err
	}
	lo, err := r.object(lv, o.at("limits"))
	if err != nil {
		return nil, err
	}
	dsts := []*bool{&c.Limits.Reductions, &c.Limits.WallTime, &c.Limits.Memory, &c.Limits.ArtifactBytes,
		&c.Limits.Cancellation, &c.Limits.Pids, &c.Limits.CPU}
	for i, k := range enforcedKeys {
		if v := lo.get(k); v != nil {
			if *dsts[i], err = r.boolean(v, lo.at(k)); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range []struct {
		key string
		dst *bool
	}{{"state_reads", &c.StateReads}, {"secret_proofs", &c.SecretProofs}, {"zero_knowledge", &c.ZeroKnowledge}, {"succinct", &c.Succinct}} {
		v, err := o.need(f.key)
		if err != nil {
			return nil, err
		}
		if *f.dst, err = r.boolean(v, o.at(f.key)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func stringList(r reader, o *object, key string) ([]string, error) {
	v, err := o.need(key)
	if err != nil {
		return nil, err
	}
	items, err := r.array(v, o.at(key), 64)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(items))
	for i, it := range items {
		if out[i], err = r.str(it, index(o.at(key), i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}
