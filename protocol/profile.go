package protocol

// ContractV1 is the only contract version this package speaks.
const ContractV1 = "cyber/worker/v1"

// Proof profile identifiers. They are compared as exact strings: there is
// no prefix matching, no case folding and never a fallback to another
// profile.
const (
	// ProfilePublicTrace is this project's public, stateless execution
	// certificate: complete witness disclosure, linear verification. Its
	// statement comes before its witness, so a prover holds the whole
	// certificate until the run ends. Still proved and verified, for one
	// release after ProfilePublicTraceV2 (docs/protocol.md §2.1).
	ProfilePublicTrace = "cyber-nox-public-trace-v1"
	// ProfilePublicTraceV2 is the same disclosure streamed: a header
	// (program, inputs, budget), the witness, then a trailer (outputs,
	// reductions, calls), with a node table the prover and verifier
	// collect at the same points (docs/certificate.md). A prover writes it
	// as the run goes, in bounded memory, whatever the job's length. The
	// default of new prove jobs.
	ProfilePublicTraceV2 = "cyber-nox-public-trace-v2"
	// ProfileNone selects no proof at all: execution only.
	ProfileNone = "none/1"

	// The upstream zheng profiles are real, but their byte formats are not
	// produced here. They are named so that requests for them fail as
	// unsupported rather than as unknown, and so that nobody is tempted to
	// serve them with ProfilePublicTrace.
	ProfileZhengV1 = "zheng-nox-public-execution-v1"
	ProfileZhengV2 = "zheng-nox-public-execution-v2"
	ProfileZhengV3 = "zheng-nox-public-execution-v3"
)

// SupportedProfile reports whether id is a profile this contract
// implementation can serve (given a backend that offers it).
func SupportedProfile(id string) bool {
	return id == ProfilePublicTrace || id == ProfilePublicTraceV2 || id == ProfileNone
}

// PublicTraceProfiles are the certificate profiles of this project, the
// default first: what a worker offers and what a CLI's --profile takes.
var PublicTraceProfiles = []string{ProfilePublicTraceV2, ProfilePublicTrace}

// DefaultProveProfile is the profile a new prove job gets when its
// client names none.
const DefaultProveProfile = ProfilePublicTraceV2

// IsPublicTrace reports whether id is one of this project's certificate
// profiles (v1 or v2).
func IsPublicTrace(id string) bool { return id == ProfilePublicTrace || id == ProfilePublicTraceV2 }

// Operation is what a job asks of a worker.
type Operation string

const (
	OpExecute Operation = "execute"
	OpProve   Operation = "prove"
	OpVerify  Operation = "verify"
)

// Valid reports whether o is one of the three operations.
func (o Operation) Valid() bool { return o == OpExecute || o == OpProve || o == OpVerify }

// ResultKind says what a result is evidence of. Native execution never
// stands in for a certificate.
type ResultKind string

const (
	KindExecution            ResultKind = "execution"
	KindExecutionCertificate ResultKind = "execution_certificate"
	KindVerification         ResultKind = "verification"
)

// Valid reports whether k is one of the three kinds.
func (k ResultKind) Valid() bool {
	return k == KindExecution || k == KindExecutionCertificate || k == KindVerification
}

// KindFor is the result kind an operation produces.
func KindFor(op Operation) ResultKind {
	switch op {
	case OpProve:
		return KindExecutionCertificate
	case OpVerify:
		return KindVerification
	}
	return KindExecution
}

// ParseProfileFlag reads a CLI's --profile: a certificate profile's full
// id, or its short name v1 or v2. Anything else is invalid_job: a CLI
// never guesses another profile for one it does not know.
func ParseProfileFlag(s string) (string, error) {
	switch s {
	case "v2", ProfilePublicTraceV2:
		return ProfilePublicTraceV2, nil
	case "v1", ProfilePublicTrace:
		return ProfilePublicTrace, nil
	}
	return "", Errorf(CodeInvalidJob, "--profile must be v2 (%s) or v1 (%s)", ProfilePublicTraceV2, ProfilePublicTrace)
}
