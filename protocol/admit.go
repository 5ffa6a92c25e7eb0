package protocol

// AdmittedJob is a job that passed admission for a particular backend: its
// spec (with the derived program identity filled in), the parsed program,
// and the canonical bytes the job is stored and compared by.
type AdmittedJob struct {
	Spec    JobSpec
	Program *Program
	// Canonical is Spec's canonical JSON (nil from AdmitToRun). Two
	// submissions with one job id are the same job exactly when these
	// bytes are equal.
	Canonical []byte
}

// Identity is the program identity derived from the frozen bundle.
func (j *AdmittedJob) Identity() ProgramIdentity { return j.Program.Identity() }

// ArtifactCap is the artifact size bound in force for this job.
func (j *AdmittedJob) ArtifactCap() uint64 { return j.Spec.Limits.ArtifactCap() }

// Admit parses a job spec and admits it for a backend with the given
// capabilities (see AdmitSpec).
func Admit(spec []byte, caps Capabilities) (*AdmittedJob, error) {
	s, err := ParseJobSpec(spec)
	if err != nil {
		return nil, err
	}
	return AdmitSpec(*s, caps)
}

// AdmitToRun is Admit without the canonical form: the same checks, but
// Canonical is left nil. A worker runs the job and neither stores nor
// compares it (encoding it was encoding/json's first use in every worker
// process, about 2 % of a trivial job's worker CPU); the supervisor
// encodes it itself, once, after its operator's limits are filled in.
func AdmitToRun(spec []byte, caps Capabilities) (*AdmittedJob, error) {
	s, err := ParseJobSpec(spec)
	if err != nil {
		return nil, err
	}
	return admit(*s, caps, false)
}

// AdmitSpec decides whether a backend with capabilities caps may run the
// job, cheapest checks first: the spec's own rules (Validate); then what
// the backend offers — contract, exact profile id, operation, and every
// requested limit it can actually enforce (the reduction budget always
// counts as requested); only then the bundle is parsed (its size is already
// bounded) and its derived identity compared with a declared one. Nothing
// here runs the program.
func AdmitSpec(spec JobSpec, caps Capabilities) (*AdmittedJob, error) {
	return admit(spec, caps, true)
}

func admit(spec JobSpec, caps Capabilities, canonical bool) (*AdmittedJob, error) {
	if err := caps.Validate(); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if !contains(caps.Contracts, spec.Contract) {
		return nil, Errorf(CodeUnsupportedProfile, "the backend does not speak %s", spec.Contract)
	}
	if !contains(caps.ProofKinds, spec.Profile) {
		return nil, Errorf(CodeUnsupportedProfile, "the backend does not offer profile %s", spec.Profile)
	}
	if !contains(caps.Operations, spec.Operation) {
		return nil, Errorf(CodeUnsupportedProfile, "the backend does not offer the %s operation", spec.Operation)
	}
	if err := checkLimits(spec.Limits, caps.Limits); err != nil {
		return nil, err
	}
	p, err := ParseBundle(spec.Program.Bundle)
	if err != nil {
		return nil, err
	}
	derived := p.Identity()
	if spec.Program.Identity != nil && !spec.Program.Identity.Matches(derived) {
		return nil, Errorf(CodeInvalidJob, "program.identity does not match the identity derived from the bundle")
	}
	spec.Program.Identity = &derived
	spec.Program.Bundle = p.Bundle
	job := &AdmittedJob{Spec: spec, Program: p}
	if canonical {
		b, err := spec.MarshalJSON()
		if err != nil {
			return nil, Errorf(CodeInternalError, "encoding the admitted job: %v", err)
		}
		job.Canonical = b
	}
	return job, nil
}

// checkLimits refuses limits the backend would only pretend to enforce.
func checkLimits(l Limits, e EnforcedLimits) error {
	switch {
	case !e.Reductions:
		return Errorf(CodeUnsupportedLimit, "the backend cannot enforce a reduction budget")
	case l.WallTimeMS > 0 && !e.WallTime:
		return Errorf(CodeUnsupportedLimit, "the backend cannot enforce limits.wall_time_ms")
	case l.MemoryBytes > 0 && !e.Memory:
		return Errorf(CodeUnsupportedLimit, "the backend cannot enforce limits.memory_bytes")
	case l.ArtifactBytes > 0 && !e.ArtifactBytes:
		return Errorf(CodeUnsupportedLimit, "the backend cannot enforce limits.artifact_bytes")
	}
	return nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
