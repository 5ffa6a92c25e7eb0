package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// CheckReport is what a store check found. A sound store has no
// Problems; a file too damaged to read at all is an error (ErrCorrupt)
// rather than a report.
type CheckReport struct {
	File     string `json:"file"`
	Schema   int    `json:"schema_version"`
	PageSize int    `json:"page_size"`
	Pages    uint64 `json:"pages"`
	Records  int    `json:"records"`
	Jobs     int    `json:"jobs"`
	Attempts int    `json:"attempts"`
	Events   int    `json:"events"`
	Queued   int    `json:"queued"`
	// Tombstones counts removed jobs (their ids stay taken).
	Tombstones int `json:"tombstones"`
	// Fencing counts the records of local dispatch and fencing;
	// Signatures says whether their signatures were verified (only with
	// the neuron's key: the open store's, or the home's vault's offline;
	// never a --file's).
	Fencing    int    `json:"fencing_records"`
	Signatures string `json:"signatures"`
	// Unauthenticated counts the fencing records read without an
	// authentication tag because the store's root predates schema 7:
	// the next start with the neuron's key tags them.
	Unauthenticated int `json:"unauthenticated_records,omitempty"`
	// Backup is set when the file is a backup copy (a start on it fences
	// it); Fence is the last fence of a restored store.
	Backup   *store.BackupMark   `json:"backup,omitempty"`
	Fence    *store.RestoreFence `json:"fence,omitempty"`
	Problems []string            `json:"problems"`
	// Note says what the check did not cover: a daemon whose jobs are on
	// a shared store (etcd) checks the home's own store, and the jobs are
	// etcd's to back up (docs/cluster.md, "Maintenance").
	Note string `json:"note,omitempty"`
}

// maxProblems bounds a report: a badly broken store lists its first ones.
const maxProblems = 100

func (r *CheckReport) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	} else if len(r.Problems) == maxProblems {
		r.Problems = append(r.Problems, "(more problems not listed)")
	}
}

// Checker is a store that can check itself while in use.
type Checker interface {
	Check(ctx context.Context) (*CheckReport, error)
}

// Backuper is a store that can write a consistent copy of itself while in
// use.
type Backuper interface {
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// OpenReadOnly opens the store file at path for reading, after the same
// check Open makes, under a shared lock (a supervisor that owns the
// file makes it fail with ErrLocked: ask the daemon instead). It never
// migrates or writes.
func OpenReadOnly(path string, lockWait time.Duration) (*Store, error) {
	if err := Exists(path); err != nil {
		return nil, err
	}
	return openFile(path, &bbolt.Options{Timeout: lockWait, ReadOnly: true})
}

// Exists checks that path is a store's file (ErrNoStore when nothing is
// there, or something that is no regular file: bbolt's open of a FIFO
// would wait for a writer, past any signal, and a directory is no store).
func Exists(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w at %s", store.ErrNoStore, path)
		}
		return fmt.Errorf("open store %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w at %s: not a regular file", store.ErrNoStore, path)
	}
	return nil
}

// CheckFile checks the store file at path (a home's, or a backup) without
// changing it; see OpenReadOnly for the lock. Signatures and
// authentication tags are not checked (CheckFileTrusting).
func CheckFile(path string, lockWait time.Duration) (*CheckReport, error) {
	return CheckFileTrusting(path, lockWait, nil)
}

// Verifier is a neuron key as a check uses it: the public key that
// signed records verify under, and the record key that checks every
// fencing record's tag. *neuron.Key is one.
type Verifier interface {
	PublicKey() neuron.PublicKey
	RecordKey() *neuron.RecordKey
}

// checkKeys are what a check verifies with; either may be nil.
type checkKeys struct {
	pub *neuron.PublicKey
	rec *neuron.RecordKey
}

func keysOf(v Verifier) checkKeys {
	if v == nil {
		return checkKeys{}
	}
	pub := v.PublicKey()
	return checkKeys{pub: &pub, rec: v.RecordKey()}
}

// CheckFileTrusting is CheckFile that also verifies every signed record
// and every fencing record's authentication tag with the neuron's key
// (nil: not checked), as the check of an open store does.
func CheckFileTrusting(path string, lockWait time.Duration, key Verifier) (*CheckReport, error) {
	s, err := OpenReadOnly(path, lockWait)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rep := &CheckReport{File: path, Problems: []string{}}
	fillFromFile(rep, s.file)
	err = s.view(func(tx *bbolt.Tx) error {
		checkTx(tx, s.path, keysOf(key), rep)
		return nil
	})
	return rep, err
}

// Check is the same check on the open store, as of one read transaction:
// its consistent copy of the file is written beside the store and checked
// as CheckFile checks a file. bbolt's own check must not run in a read
// transaction of a store that is being written (it reads the free list
// that writers change), and on the copy nothing writes.
func (s *Store) Check(ctx context.Context) (*CheckReport, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".check-*.db")
	if err != nil {
		return nil, fmt.Errorf("check store %s: %w", s.path, err)
	}
	defer os.Remove(tmp.Name())
	err = s.view(func(tx *bbolt.Tx) error {
		_, err := tx.WriteTo(tmp)
		return err
	})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("check store %s: copy: %w", s.path, err)
	}
	c, err := OpenReadOnly(tmp.Name(), time.Second)
	if err != nil {
		return nil, relabel(err, tmp.Name(), s.path)
	}
	defer c.Close()
	rep := &CheckReport{File: s.path, Problems: []string{}}
	fillFromFile(rep, c.file)
	err = c.view(func(tx *bbolt.Tx) error {
		checkTx(tx, s.path, checkKeys{pub: s.trust.Key(), rec: s.recordKey()}, rep)
		return nil
	})
	return rep, relabel(err, tmp.Name(), s.path)
}

// relabel names the store, not its copy, in a damage report.
func relabel(err error, copyPath, path string) error {
	var ce *store.CorruptError
	if errors.As(err, &ce) && ce.File == copyPath {
		c := *ce
		c.File = path
		return &c
	}
	return err
}

// Backup writes a consistent copy of the store to w, as of one read
// transaction, while the store stays in use.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := s.view(func(tx *bbolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

func fillFromFile(rep *CheckReport, fr *fileReport) {
	rep.PageSize, rep.Pages, rep.Records = fr.PageSize, fr.Pages, fr.Records
}

// checkTx runs bbolt's own consistency check, then reads every record of
// the known buckets and checks the invariants the store keeps.
func checkTx(tx *bbolt.Tx, path string, keys checkKeys, rep *CheckReport) {
	for err := range tx.Check() {
		rep.problem("bbolt: %v", err)
	}
	auth := newCheckAuth(tx, keys, rep)
	read := func(bucket []byte, fn func(k, payload []byte)) {
		b := tx.Bucket(bucket)
		if b == nil {
			rep.problem("bucket %s is missing", bucket)
			return
		}
		r := records{b: b, name: bucket, file: path}
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				rep.problem("%s/%s: a nested bucket", bucket, store.PrintableKey(k))
				return nil
			}
			p, err := r.open(k, v)
			if err != nil {
				rep.problem("%v", err)
				return nil
			}
			if isFencingBucket(bucket) {
				if p, err = auth.open(bucket, k, p); err != nil {
					rep.problem("%v", err)
					return nil
				}
			}
			fn(k, p)
			return nil
		})
	}
	var meta store.Meta
	read(bucketMeta, func(k, p []byte) {
		if !bytes.Equal(k, keyMeta) {
			rep.problem("meta/%s: an unknown record", store.PrintableKey(k))
		} else if err := json.Unmarshal(p, &meta); err != nil {
			rep.problem("meta/meta does not decode: %v", err)
		}
	})
	rep.Schema, rep.Backup, rep.Fence = meta.SchemaVersion, meta.Backup, meta.Fence
	if meta.SchemaVersion != SchemaVersion {
		rep.problem("schema version %d, this build reads %d", meta.SchemaVersion, SchemaVersion)
		return
	}
	c := invariantCheck{rep: rep, jobs: map[string]*store.Job{}, specs: map[string]specSum{},
		attempts: map[string]map[uint32]*store.Attempt{}, accepted: map[string]uint32{},
		queue: map[string][]byte{}, queueIdx: map[string][]byte{}, events: map[string]bool{},
		submitted: map[uint64]string{}, live: map[string]bool{}, tombstones: map[string]bool{}}
	read(bucketJobs, c.job)
	if specs := tx.Bucket(bucketSpecs); specs == nil {
		rep.problem("bucket %s is missing", bucketSpecs)
	} else {
		forEachSpec(specs, func(id, key, value, bucket []byte) {
			p, err := records{name: bucket, file: path}.open(key, value)
			if err != nil {
				rep.problem("%v", err)
				return
			}
			c.specs[string(id)] = specSum{size: len(p), digest: store.SpecDigest(p)}
		}, rep.problem)
	}
	read(bucketAttempts, c.attempt)
	read(bucketEvents, c.event)
	read(bucketAccepted, c.acceptedEntry)
	read(bucketQueue, func(k, p []byte) { c.queue[string(k)] = bytes.Clone(p) })
	read(bucketQueueIdx, func(k, p []byte) { c.queueIdx[string(k)] = bytes.Clone(p) })
	read(bucketSubmitted, c.submittedEntry)
	read(bucketLive, func(k, p []byte) {
		if len(p) != 0 {
			c.rep.problem("live/%s: holds %d bytes", store.PrintableKey(k), len(p))
		}
		c.live[string(k)] = true
	})
	read(bucketTombstones, c.tombstone)
	c.finish(meta)
	checkFencing(read, keys.pub, c.attempts, rep)
	auth.finish()
}

// invariantCheck collects the records of one transaction and checks what
// the store's writes guarantee about them together.
type invariantCheck struct {
	rep      *CheckReport
	jobs     map[string]*store.Job
	specs    map[string]specSum
	attempts map[string]map[uint32]*store.Attempt
	accepted map[string]uint32
	queue    map[string][]byte // queue key → job id
	queueIdx map[string][]byte // job id → queue key
	events   map[string]bool   // jobs with events
	// submitted is the submitted index (seq → job id); tombstones the
	// ids of removed jobs.
	submitted  map[uint64]string
	live       map[string]bool
	tombstones map[string]bool
}

// specSum is what the check keeps of a spec: its size and SHA-256 hex,
// not its bytes (a verify job's spec carries its artifact, up to 48 MiB,
// and the check reads every spec of the store).
type specSum struct {
	size   int
	digest string
}

func (c *invariantCheck) submittedEntry(k, p []byte) {
	if len(k) != 8 {
		c.rep.problem("submitted/%s: not a seq", store.PrintableKey(k))
		return
	}
	c.submitted[binary.BigEndian.Uint64(k)] = string(p)
}

func (c *invariantCheck) tombstone(k, p []byte) {
	var ts store.Tombstone
	if err := json.Unmarshal(p, &ts); err != nil {
		c.rep.problem("tombstones/%s does not decode: %v", store.PrintableKey(k), err)
		return
	}
	restored := ts.Restored && ts.SpecDigest == "" && ts.State == lifecycle.Unknown
	if ts.ID != string(k) || !restored && (ts.Restored || ts.SpecDigest == "" || !ts.State.Terminal() || ts.State == lifecycle.Unknown) {
		c.rep.problem("tombstones/%s: names job %q, digest %q, state %q", store.PrintableKey(k), ts.ID, ts.SpecDigest, ts.State)
		return
	}
	c.tombstones[ts.ID] = true
	c.rep.Tombstones++
}

func (c *invariantCheck) job(k, p []byte) {
	var j store.Job
	if err := json.Unmarshal(p, &j); err != nil {
		c.rep.problem("jobs/%s does not decode: %v", store.PrintableKey(k), err)
		return
	}
	if j.ID != string(k) || !j.State.Valid() {
		c.rep.problem("jobs/%s: names job %q in state %q", store.PrintableKey(k), j.ID, j.State)
		return
	}
	c.jobs[j.ID] = &j
	c.rep.Jobs++
}

// splitKey splits "job ‖ 0x00 ‖ n" keys (attempts, events).
func splitKey(k []byte, n int) (string, []byte, bool) {
	if len(k) < n+2 || k[len(k)-n-1] != 0 {
		return "", nil, false
	}
	return string(k[:len(k)-n-1]), k[len(k)-n:], true
}

func (c *invariantCheck) attempt(k, p []byte) {
	job, num, ok := splitKey(k, 4)
	var a store.Attempt
	if !ok {
		c.rep.problem("attempts/%s: not a job and attempt number", store.PrintableKey(k))
		return
	}
	if err := json.Unmarshal(p, &a); err != nil {
		c.rep.problem("attempts/%s does not decode: %v", store.PrintableKey(k), err)
		return
	}
	if a.Job != job || a.N != binary.BigEndian.Uint32(num) || a.N == 0 || !a.State.Valid() {
		c.rep.problem("attempts/%s: names attempt %s/%d in state %q", store.PrintableKey(k), a.Job, a.N, a.State)
		return
	}
	if c.attempts[job] == nil {
		c.attempts[job] = map[uint32]*store.Attempt{}
	}
	c.attempts[job][a.N] = &a
	c.rep.Attempts++
}

func (c *invariantCheck) event(k, p []byte) {
	job, seq, ok := splitKey(k, 8)
	var e store.Event
	if !ok {
		c.rep.problem("events/%s: not a job and sequence number", store.PrintableKey(k))
		return
	}
	if err := json.Unmarshal(p, &e); err != nil {
		c.rep.problem("events/%s does not decode: %v", store.PrintableKey(k), err)
		return
	}
	if e.Job != job || e.Seq != binary.BigEndian.Uint64(seq) {
		c.rep.problem("events/%s: names event %s/%d", store.PrintableKey(k), e.Job, e.Seq)
	}
	c.events[job] = true
	c.rep.Events++
}

func (c *invariantCheck) acceptedEntry(k, p []byte) {
	if len(p) != 4 {
		c.rep.problem("accepted/%s: %d bytes, not an attempt number", store.PrintableKey(k), len(p))
		return
	}
	c.accepted[string(k)] = binary.BigEndian.Uint32(p)
}

func (c *invariantCheck) finish(meta store.Meta) {
	for id, j := range c.jobs {
		spec, ok := c.specs[id]
		if !ok {
			c.rep.problem("job %s has no spec", id)
		} else if err := store.CheckSpecSum(spec.size, spec.digest, j.SpecDigest); err != nil {
			c.rep.problem("job %s: %v", id, err)
		}
		if j.Seq > meta.NextSeq && meta.NextSeq != 0 {
			c.rep.problem("job %s has seq %d, above the store's last %d", id, j.Seq, meta.NextSeq)
		}
		var acceptedAttempts []uint32
		for n, a := range c.attempts[id] {
			if n > j.Attempts {
				c.rep.problem("attempt %s/%d: the job has prepared %d", id, n, j.Attempts)
			}
			if a.State == lifecycle.Accepted {
				acceptedAttempts = append(acceptedAttempts, n)
			}
		}
		if r := j.Resolved; r != nil {
			// The operator resolved an unknown attempt: it stays unknown.
			if a := c.attempts[id][r.Attempt]; a == nil || a.State != lifecycle.Unknown {
				c.rep.problem("job %s names attempt %d resolved (%s), which is not an unknown attempt of it", id, r.Attempt, r.As)
			}
		}
		idx, indexed := c.accepted[id]
		switch {
		case len(acceptedAttempts) > 1:
			c.rep.problem("job %s has %d accepted attempts %v", id, len(acceptedAttempts), acceptedAttempts)
		case j.State == lifecycle.Accepted && (j.Accepted == 0 || !indexed || idx != j.Accepted):
			c.rep.problem("job %s is accepted with attempt %d, the accepted index says %d (%v)", id, j.Accepted, idx, indexed)
		case indexed && (len(acceptedAttempts) != 1 || acceptedAttempts[0] != idx):
			c.rep.problem("job %s: the accepted index names attempt %d, accepted attempts are %v", id, idx, acceptedAttempts)
		case j.Accepted != 0 && j.State != lifecycle.Accepted:
			c.rep.problem("job %s names accepted attempt %d in state %s", id, j.Accepted, j.State)
		}
		if key, queued := c.queueIdx[id]; queued {
			c.rep.Queued++
			if j.State.Terminal() {
				c.rep.problem("job %s is %s and still queued", id, j.State)
			}
			if got := c.queue[string(key)]; string(got) != id {
				c.rep.problem("job %s: its queue index points at %q", id, got)
			}
		}
	}
	for id, j := range c.jobs {
		if c.submitted[j.Seq] != id {
			c.rep.problem("job %s (seq %d) is not in the submitted index (it names %q)", id, j.Seq, c.submitted[j.Seq])
		}
		if c.tombstones[id] {
			c.rep.problem("job %s has a tombstone", id)
		}
		if c.live[id] == j.State.Terminal() {
			c.rep.problem("job %s is %s, and the live index says it has %s", id, j.State, map[bool]string{true: "not ended", false: "ended"}[c.live[id]])
		}
	}
	for id := range c.live {
		if c.jobs[id] == nil {
			c.rep.problem("the live index names %s, which is not a job", id)
		}
	}
	for seq, id := range c.submitted {
		if j := c.jobs[id]; j == nil || j.Seq != seq {
			c.rep.problem("the submitted index names %s at seq %d, which is not that job", id, seq)
		}
	}
	for id := range c.specs {
		if c.jobs[id] == nil {
			c.rep.problem("spec of %s has no job", id)
		}
	}
	for id := range c.attempts {
		if c.jobs[id] == nil {
			c.rep.problem("attempts of %s have no job", id)
		}
	}
	for id := range c.events {
		if c.jobs[id] == nil {
			c.rep.problem("events of %s have no job", id)
		}
	}
	for id := range c.accepted {
		if c.jobs[id] == nil {
			c.rep.problem("the accepted index names %s, which is not a job", id)
		}
	}
	for key, id := range c.queue {
		if string(c.queueIdx[string(id)]) != key {
			c.rep.problem("queue entry %s for %s has no index", store.PrintableKey([]byte(key)), id)
		}
	}
}
