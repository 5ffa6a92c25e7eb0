// Package store is the supervisor's durable state: jobs, attempts and
// events, behind an interface so that a distributed store can replace the
// local one. Every state change happens inside one transaction; the store
// itself refuses what would break the lifecycle: a changed frozen spec, a
// changed attempt identity, a transition the state machine does not
// allow, a terminal state that changes, or a second accepted attempt.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

var (
	// ErrNotFound: no such job or attempt.
	ErrNotFound = errors.New("not found")
	// ErrLocked: another process owns the store.
	ErrLocked = errors.New("store is owned by another process")
	// ErrNoStore: there is no store file where one was to be opened
	// without being made (a check, a backup, maintenance): a mistyped
	// home, not an empty store.
	ErrNoStore = errors.New("no store")
	// ErrConflict: the write contradicts what is stored (a different
	// payload under an existing job id, a changed attempt identity).
	ErrConflict = errors.New("conflicts with the stored record")
	// ErrInvariant: the write would break a lifecycle invariant.
	ErrInvariant = errors.New("lifecycle invariant")
	// ErrSchema: the store was written with another schema version.
	ErrSchema = errors.New("unsupported store schema")
	// ErrRemoved: the job was removed by retention; its id stays taken
	// (its tombstone says by which payload).
	ErrRemoved = errors.New("the job was removed; its id is never used again")
)

// Store is the durable state.
type Store interface {
	// Update runs fn in one read-write transaction: all or nothing.
	Update(ctx context.Context, fn func(Tx) error) error
	// Batch is Update for writers that may share a commit with other
	// Batch calls in flight (a group commit). fn may run more than once
	// and must act only through tx; a failing fn never makes another
	// fail.
	Batch(ctx context.Context, fn func(Tx) error) error
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Tx) error) error
	// Trust sets the neuron's public key, which signed records are
	// checked against, once (ErrTrustSet for another key).
	Trust(pub neuron.PublicKey) error
	// TrustSigner is Trust for the key this process signs with; records
	// it signed are not verified again when written.
	TrustSigner(Signer) error
	// Preverify checks a signed record's signature outside any
	// transaction, so that writing exactly that record inside one
	// verifies nothing more.
	Preverify(Signed) error
	Close() error
}

// Tx is a transaction. Records returned are copies.
type Tx interface {
	Meta() (Meta, error)
	PutMeta(Meta) error
	// NextSeq is a job seq (FIFO order) of its own, above every seq
	// handed out by transactions that committed before this one began:
	// the meta record's counter on the local store; on a store shared by
	// several hosts a time-based one that concurrent submissions do not
	// conflict on (docs/cluster.md).
	NextSeq() (uint64, error)

	// Job is the job's record, without its spec (see Spec).
	Job(id string) (*Job, error)
	// CreateJob stores a new job with its frozen spec, whose SHA-256 hex
	// must be j.SpecDigest. The spec is written once and never again.
	// Nobody changes spec after the call (the caller may keep reading
	// it): a store may keep it until it commits, and write what it adds
	// to the record into its spare capacity rather than copy it (a verify
	// job's spec carries its artifact, up to 48 MiB).
	CreateJob(j *Job, spec []byte) error
	// PutJob updates a stored job. Its spec digest, seq and creation
	// time never change.
	PutJob(*Job) error
	// Spec is the job's frozen spec: the canonical bytes it was admitted
	// with.
	Spec(id string) ([]byte, error)
	// ForEachJob visits jobs in id order until fn returns false.
	ForEachJob(fn func(*Job) bool) error
	// ForEachSubmitted visits jobs in submission order (seq), or newest
	// first, until fn returns false.
	ForEachSubmitted(newestFirst bool, fn func(*Job) bool) error
	// ForEachLive visits the jobs that have not ended, in id order, until
	// fn returns false.
	ForEachLive(fn func(*Job) bool) error
	// RemoveJob deletes an ended job (terminal and not unknown) with its
	// spec, attempts, events and indexes, and leaves its tombstone: the
	// id can never be created again.
	RemoveJob(id string, removed time.Time) (*Tombstone, error)
	// Tombstone is the tombstone of a removed job (ErrNotFound: none).
	Tombstone(id string) (*Tombstone, error)

	Attempt(job string, n uint32) (*Attempt, error)
	// PutAttempt creates an attempt or moves it along the lifecycle.
	PutAttempt(*Attempt) error
	Attempts(job string) ([]*Attempt, error)

	// AppendEvent records an event; its Seq is assigned.
	AppendEvent(Event) error
	Events(job string) ([]Event, error)

	// Enqueue puts a job in the ready queue (priority first, then FIFO by
	// seq); Dequeue removes it. Queued lists up to n ready jobs in order.
	Enqueue(job string, priority int32, seq uint64) error
	Dequeue(job string) error
	Queued(n int) ([]string, error)
	// ForEachQueued visits the queue in order until fn returns false. A
	// store shared by several hosts protects what was visited, not the
	// rest: a job queued behind the one a transaction takes does not
	// conflict with it.
	ForEachQueued(fn func(job string) bool) error
	// QueueLen counts the queue. On a store shared by several hosts it is
	// the count at the transaction's snapshot and is not compared at
	// commit: an admission bound, not an invariant (docs/cluster.md).
	QueueLen() (int, error)

	// ForEachUnfinished visits every attempt that has not ended (queued,
	// running, produced or verified) of a job that has not ended (no
	// other attempt can change), for recovery.
	ForEachUnfinished(fn func(*Attempt) bool) error

	FencingTx
}

// FencingTx holds the records of local dispatch and fencing. Every rule
// of docs/fencing.md that a record can break is checked here, inside the
// transaction: CAS moves of the root and the grant, prog and invocation
// lifecycles, step reservations (charged + held never above the limit,
// nothing refunded), one attempt per operation for the current placement,
// one claim per attempt, one outcome per attempt. Every record carries
// an authentication tag under the neuron's record key, checked on every
// read (ErrTampered when it does not verify), and signed records (root,
// grant, attempts, claims, job claims) are verified on every read and
// every write as well; one that does not verify is ErrTampered.
type FencingTx interface {
	// Root is the neuron root; ErrNotFound before neuron init.
	Root() (*Root, error)
	// PutRoot creates the root (generation 0, no worker) or moves it by a
	// placement (generation +1, same policy and epoch) or a policy change
	// (same generation and worker, larger epoch).
	PutRoot(*Root) error

	// Grant is the current grant (the highest revision).
	Grant() (*Grant, error)
	GrantRevision(rev uint64) (*Grant, error)
	// PutGrant stores the next revision (0 first, then current+1) for the
	// root's neuron and network, with an epoch never below the current.
	PutGrant(*Grant) error

	Prog(id string) (*Prog, error)
	ForEachProg(fn func(*Prog) bool) error
	CreateProg(*Prog) error
	// PutProg moves a prog along its lifecycle; retiring and retired need
	// no live invocation.
	PutProg(*Prog) error
	// UpgradeProg replaces a prog by its next revision, keeping the one
	// it replaces; ProgRevision reads any revision of it.
	UpgradeProg(*Prog) error
	ProgRevision(id string, rev uint64) (*Prog, error)

	Invocation(id string) (*Invocation, error)
	ForEachInvocation(fn func(*Invocation) bool) error
	// CreateInvocation assigns the invocation's Seq and ID. A child
	// (Parent set) takes its limit from its parent's free steps.
	CreateInvocation(*Invocation) error
	// Children lists an invocation's children.
	Children(parent string) ([]string, error)
	// PutInvocation changes an invocation's epoch (rebind) or ends it.
	PutInvocation(*Invocation) error
	LiveInvocations(prog string) (int, error)
	// ArchiveInvocation archives a top-level invocation whose whole tree
	// has ended.
	ArchiveInvocation(id string) error
	ArchivedInvocation(id string) (*Invocation, error)

	Reservation(inv string) (*Reservation, error)
	// Reserve opens a step reservation; Charge closes it, charging at
	// most what it held.
	Reserve(*Reservation) error
	Charge(inv string, used uint64) error

	Operation(id string) (*Operation, error)
	Operations(inv string) ([]*Operation, error)
	ForEachOperation(fn func(*Operation) bool) error
	CreateOperation(*Operation) error
	ConsumeOperation(id string) error

	ActAttempt(op string, n uint32) (*ActAttempt, error)
	ActAttempts(op string) ([]*ActAttempt, error)
	RecordAttempt(*ActAttempt) error
	Claim(op string, n uint32) (*Claim, error)
	// RecordClaim is write-once: ErrClaimed for a second claim.
	RecordClaim(*Claim) error
	Outcome(op string, n uint32) (*Outcome, error)
	RecordOutcome(*Outcome) (recorded bool, err error)

	JobClaim(job string, n uint32) (*JobClaim, error)
	RecordJobClaim(*JobClaim) error

	// AuthenticateRecords tags the fencing records a store of schema 6
	// kept without tags, and replaces its root by flagged: the same root
	// saying RecordsAuthenticated (nil when the store has no root yet).
	// It returns how many it tagged and how many it left without a tag
	// (records that do not check: they stay refused). A store whose root
	// is older than its records is ErrRootPutBack.
	AuthenticateRecords(flagged *Root) (tagged, left int, err error)
}

// FirstQueued is Queued(n) of a store whose queue is visited by each (its
// ForEachQueued): the first n ready jobs, in order.
func FirstQueued(each func(fn func(job string) bool) error, n int) ([]string, error) {
	var out []string
	err := each(func(id string) bool {
		if len(out) >= n {
			return false
		}
		out = append(out, id)
		return true
	})
	return out, err
}
