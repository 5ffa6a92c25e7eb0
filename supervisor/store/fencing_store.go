package store

import "context"

// Fencing is the store of local dispatch and fencing (docs/fencing.md):
// the neuron root, grants, progs, invocations and host acts. Only the
// home's own store keeps them (bolt.Store.Fencing, supervisor/store/bolt):
// on a cluster they stay in each home's file, never in the shared job
// store (docs/cluster.md).
type Fencing interface {
	// Update, Batch and View are Store's, over fencing transactions.
	Update(ctx context.Context, fn func(FencingTx) error) error
	Batch(ctx context.Context, fn func(FencingTx) error) error
	View(ctx context.Context, fn func(FencingTx) error) error
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
	NeuronTx
	InvocationTx
	ActTx
}

// NeuronTx holds the records of the neuron: its root, its grants and
// the progs it installed.
type NeuronTx interface {
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

	// AuthenticateRecords tags the fencing records a store of schema 6
	// kept without tags, and replaces its root by flagged: the same root
	// saying RecordsAuthenticated (nil when the store has no root yet).
	// It returns how many it tagged and how many it left without a tag
	// (records that do not check: they stay refused). A store whose root
	// is older than its records is ErrRootPutBack.
	AuthenticateRecords(flagged *Root) (tagged, left int, err error)
}

// InvocationTx holds the invocations of progs and their VM step
// reservations.
type InvocationTx interface {
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
	// InvocationFenced reports whether a restore fenced the invocation
	// of seq (Meta.Fence): it is never run again.
	InvocationFenced(seq uint64) (bool, error)

	Reservation(inv string) (*Reservation, error)
	// Reserve opens a step reservation; Charge closes it, charging at
	// most what it held.
	Reserve(*Reservation) error
	Charge(inv string, used uint64) error
}

// ActTx holds the host acts invocations suspend on: operations, their
// attempts, claims and outcomes.
type ActTx interface {
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
}

// Local is the home's own store as one file (bolt.Store.Local): a transaction
// sees its job records and its fencing records together. Restore
// fencing and recovery, and the placement a local job attempt is
// prepared in, read and write both in one transaction.
type Local interface {
	Update(ctx context.Context, fn func(LocalTx) error) error
	Batch(ctx context.Context, fn func(LocalTx) error) error
	View(ctx context.Context, fn func(LocalTx) error) error
}

// LocalTx is a transaction of the home's own store: both domains.
type LocalTx interface {
	Tx
	FencingTx
}
