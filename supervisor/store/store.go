// Package store is the supervisor's durable state: jobs, attempts and
// events, behind an interface so that a distributed store can replace the
// local one. Every state change happens inside one transaction; the store
// itself refuses what would break the lifecycle: a changed frozen spec, a
// changed attempt identity, a transition the state machine does not
// allow, a terminal state that changes, or a second accepted attempt.
//
// This package is the contract both drivers share: the interfaces, the
// records, the errors, the rules every driver enforces (rules.go) and the
// trust signed records are checked with. The drivers are packages of
// their own: the home's bbolt file (supervisor/store/bolt) and the store
// on etcd that several hosts share (supervisor/store/etcd).
package store

import (
	"context"
	"errors"
	"time"
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
	// ErrClaimed: the attempt already has its claim. The claim is
	// one-use: a second one is refused even if it is identical.
	ErrClaimed = errors.New("the attempt is already claimed")
)

// Store is the job store: jobs, their attempts, events, queue and the
// claims of job attempts. Both drivers implement it in full: the local
// bbolt file (supervisor/store/bolt) and the store shared by several hosts (etcd). The
// neuron key signed claims are checked against is a Trust given to the
// driver when it is opened, not part of the interface.
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
	Close() error
}

// Tx is a transaction of the job store. Records returned are copies.
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
	// ForEachSubmittedFrom is ForEachSubmitted begun at seq from (the
	// first job visited is the one of seq from, or the next beyond it in
	// the walk's direction): a seek, not a walk from the end, so a page
	// of a long list costs what the page reads. From 0 oldest first, or
	// SeqNewest newest first, visits every job.
	ForEachSubmittedFrom(from uint64, newestFirst bool, fn func(*Job) bool) error
	// ForEachSubmittedSummary is ForEachSubmittedFrom visiting each
	// job's summary: a list's walk, which decodes only what a row shows.
	ForEachSubmittedSummary(from uint64, newestFirst bool, fn func(*JobSummary) bool) error
	// ForEachJobFrom is ForEachJob begun at the first id ≥ from.
	ForEachJobFrom(from string, fn func(*Job) bool) error
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

	// JobClaim is the claim of a job attempt (ErrNotFound: none).
	JobClaim(job string, n uint32) (*JobClaim, error)
	// RecordJobClaim writes an attempt's claim once (ErrClaimed for a
	// second): for an attempt that has not ended, in the generation it
	// was prepared in, its signature checked when it has one.
	RecordJobClaim(*JobClaim) error
}

// SeqNewest is ForEachSubmittedFrom's start of a newest-first walk
// over every job.
const SeqNewest = ^uint64(0)

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
