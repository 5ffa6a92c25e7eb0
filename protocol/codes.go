package protocol

// Code is a stable error code: one of the worker contract's, or one the
// supervisor's local API or CLI uses beside them. Its spelling is the wire
// form. Every code is declared here and nowhere else, and codeTable says
// everything that follows from it (docs/errors.md).
type Code string

// The contract's required codes, in the contract's order.
const (
	CodeInvalidJob         Code = "invalid_job"
	CodeUnsupportedProfile Code = "unsupported_profile"
	CodeUnsupportedLimit   Code = "unsupported_limit"
	CodeUnsupportedState   Code = "unsupported_state"
	CodeUnsupportedSecret  Code = "unsupported_secret"
	CodeBudgetExhausted    Code = "budget_exhausted"
	CodeDeadlineExceeded   Code = "deadline_exceeded"
	CodeMemoryExhausted    Code = "memory_exhausted"
	CodeArtifactTooLarge   Code = "artifact_too_large"
	CodeExecutionFailed    Code = "execution_failed"
	CodeProofRejected      Code = "proof_rejected"
	CodeClaimMismatch      Code = "claim_mismatch"
	CodeStaleState         Code = "stale_state"
	CodeCancelled          Code = "cancelled"
	CodeIOError            Code = "io_error"
	CodeInternalError      Code = "internal_error"
)

// The local API's own codes: conditions of the daemon and its requests
// that no job outcome has. A worker never reports them.
const (
	// CodeBusy: no room now (a full queue, a shutdown, the connection
	// cap, a locked store, a fencing rule of something in progress).
	CodeBusy Code = "busy"
	// CodeUnknownJob: no job has the id.
	CodeUnknownJob Code = "unknown_job"
	// CodeNotFinished: the job has no result yet.
	CodeNotFinished Code = "not_finished"
	// CodeForbidden: the socket is not this client's (another uid).
	CodeForbidden Code = "forbidden"
	// CodeStoreDamaged: the store is damaged; the message names the file
	// and the page or record (docs/store.md).
	CodeStoreDamaged Code = "store_damaged"
	// CodeInvalidCursor: a list's cursor that this daemon did not hand
	// out (damaged, cut short, or of another list).
	CodeInvalidCursor Code = "invalid_cursor"
	// CodeAmbiguousJob: a job id prefix that more than one job's id
	// starts with.
	CodeAmbiguousJob Code = "ambiguous_job"
)

// cyber-supervisor's own codes: conditions of the command line and its
// surroundings, never an answer of the API.
const (
	// CodeUsage: a command line the CLI cannot act on.
	CodeUsage Code = "usage"
	// CodeUnavailable: no daemon answers on the home's socket, or the
	// shared store (etcd) does not answer.
	CodeUnavailable Code = "unavailable"
	// CodeNoStore: a command that reads or maintains a home's store found
	// none there.
	CodeNoStore Code = "no_store"
	// CodeInterrupted: a signal ended the command; nothing was cancelled
	// by it.
	CodeInterrupted Code = "interrupted"
	// CodeStoreProblems: a store file that reads but breaks its
	// invariants (store restore).
	CodeStoreProblems Code = "store_problems"
)

// Scope says who may answer with a code.
type Scope uint8

const (
	// ScopeContract: the worker contract's required codes, the only ones
	// a worker speaks.
	ScopeContract Scope = iota + 1
	// ScopeAPI: the supervisor's local API (and so its CLI).
	ScopeAPI
	// ScopeCLI: cyber-supervisor's command line alone.
	ScopeCLI
)

// CodeSpec is one row of the error table: what follows from a code, at
// every boundary it crosses.
type CodeSpec struct {
	Code  Code
	Scope Scope
	// HTTP is the status of an API answer with the code; 0 for the CLI's
	// codes, which the API never answers. A route that answers a more
	// precise status than its code's (a path no route has, a fencing
	// refusal of a missing record) says so itself (docs/errors.md).
	HTTP int
	// Exit is the CLI's exit status.
	Exit int
	// Retryable is the default retry hint (Errorf's). An error may say
	// otherwise when it knows better (a worker's panic, a memory guard of
	// the worker's own); the hint never authorizes weaker verification.
	Retryable bool
}

// codeTable is the one error table. Only failures caused by the
// environment rather than by the job are retryable: a deadline or memory
// limit may be met on a less loaded host, I/O may be transient, an
// internal error (a crash, a bug, a lost connection) says nothing about
// the job, and a busy daemon or an unreachable one may have room later.
// Everything else would fail again with the same bytes. Exit 4
// (busy/unavailable) belongs to no contract code: it is a condition of the
// CLI's surroundings. The HTTP statuses are plain numbers: this package is
// linked into the worker, which does not link net/http.
var codeTable = [...]CodeSpec{
	{CodeInvalidJob, ScopeContract, 400, ExitUsage, false},
	{CodeUnsupportedProfile, ScopeContract, 422, ExitUnsupported, false},
	{CodeUnsupportedLimit, ScopeContract, 422, ExitUnsupported, false},
	{CodeUnsupportedState, ScopeContract, 422, ExitUnsupported, false},
	{CodeUnsupportedSecret, ScopeContract, 422, ExitUnsupported, false},
	{CodeBudgetExhausted, ScopeContract, 409, ExitFailed, false},
	{CodeDeadlineExceeded, ScopeContract, 500, ExitFailed, true},
	{CodeMemoryExhausted, ScopeContract, 500, ExitFailed, true},
	{CodeArtifactTooLarge, ScopeContract, 500, ExitFailed, false},
	{CodeExecutionFailed, ScopeContract, 500, ExitFailed, false},
	{CodeProofRejected, ScopeContract, 500, ExitRejected, false},
	{CodeClaimMismatch, ScopeContract, 403, ExitRejected, false},
	{CodeStaleState, ScopeContract, 409, ExitRejected, false},
	{CodeCancelled, ScopeContract, 500, ExitCancelled, false},
	{CodeIOError, ScopeContract, 503, ExitFailed, true},
	{CodeInternalError, ScopeContract, 500, ExitFailed, true},

	{CodeBusy, ScopeAPI, 503, ExitUnavailable, true},
	{CodeUnknownJob, ScopeAPI, 404, ExitUsage, false},
	{CodeNotFinished, ScopeAPI, 409, ExitUnavailable, true},
	{CodeForbidden, ScopeAPI, 403, ExitFailed, false},
	{CodeStoreDamaged, ScopeAPI, 500, ExitStoreDamaged, false},
	{CodeInvalidCursor, ScopeAPI, 400, ExitUsage, false},
	{CodeAmbiguousJob, ScopeAPI, 409, ExitUsage, false},

	{CodeUsage, ScopeCLI, 0, ExitUsage, false},
	{CodeUnavailable, ScopeCLI, 0, ExitUnavailable, true},
	{CodeNoStore, ScopeCLI, 0, ExitUsage, false},
	{CodeInterrupted, ScopeCLI, 0, ExitCancelled, false},
	{CodeStoreProblems, ScopeCLI, 0, ExitFailed, false},
}

// CodeSpecs returns the error table, a copy, in its order: the contract's
// codes, the API's, the CLI's.
func CodeSpecs() []CodeSpec { return append([]CodeSpec(nil), codeTable[:]...) }

// ContractCodes lists the contract's codes, in the contract's order.
func ContractCodes() []Code {
	var cs []Code
	for _, s := range codeTable {
		if s.Scope == ScopeContract {
			cs = append(cs, s.Code)
		}
	}
	return cs
}

// LookupCode returns the table's row of c.
func LookupCode(c Code) (CodeSpec, bool) {
	for _, s := range codeTable {
		if s.Code == c {
			return s, true
		}
	}
	return CodeSpec{}, false
}

// Known reports whether c is one of the contract's codes: what a worker
// may report and a retry policy may name.
func (c Code) Known() bool {
	s, ok := LookupCode(c)
	return ok && s.Scope == ScopeContract
}

// Retryable is the default retry hint of a code (false for a code not in
// the table).
func (c Code) Retryable() bool {
	s, _ := LookupCode(c)
	return s.Retryable
}

// HTTPStatus is the status of an API answer with code c: a code not in
// the table, or one the API never answers, is the daemon's own failure
// (500).
func (c Code) HTTPStatus() int {
	if s, ok := LookupCode(c); ok && s.HTTP != 0 {
		return s.HTTP
	}
	return 500
}

// ExitCode maps an error code onto the CLI exit status; "" means success
// and a code not in the table is a failure (1).
func ExitCode(code Code) int {
	if code == "" {
		return ExitOK
	}
	if s, ok := LookupCode(code); ok {
		return s.Exit
	}
	return ExitFailed
}

// ExitCodeOf is ExitCode(CodeOf(err)).
func ExitCodeOf(err error) int { return ExitCode(CodeOf(err)) }
