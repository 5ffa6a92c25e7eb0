package supervisor

import (
	"sync"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// frozenJob is what admission derived from a job's frozen spec: the spec
// parsed, the program's canonical tokens and identity derived from the
// bundle, and the frozen spec's bytes themselves. Shared between
// goroutines: read only.
type frozenJob struct {
	digest    string // the frozen spec's SHA-256, hex: store.Job.SpecDigest
	canonical []byte // the frozen spec, as the store holds it
	spec      *protocol.JobSpec
	program   *savedProgram
	size      int64 // what the entry holds that grows with the spec
}

// savedProgram is the saved job's program as verification needs it.
type savedProgram struct {
	tokens   []byte
	identity protocol.ProgramIdentity
}

// frozenSpecs keeps each admitted job's frozenJob until the job ends, so
// that its attempts do not read the frozen spec back from the store and
// parse it again, and verification does not parse the bundle and hash
// the formula again (a spec parse and a hemera digest per attempt). An
// entry answers only for the spec whose digest the job's record holds,
// the bytes the store holds: a spec is never changed after admission. A
// job it does not hold (admitted by an earlier boot, dropped, or beyond
// the byte bound) is read from the store as before.
//
// The entries are bounded in number and in bytes: a verify job's entry
// holds its spec (with the artifact inline in base64) and the artifact
// decoded, about 2.3 times the artifact, from its admission to its end,
// and a queue full of such jobs would otherwise hold that for each. An
// entry that would pass maxBytes is not kept.
type frozenSpecs struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64
	m        map[string]*frozenJob
}

// frozenBytes bounds the bytes the frozen specs hold together: the
// largest spec (protocol.MaxJobSpecBytes) with its artifact decoded
// fits.
const frozenBytes = 96 << 20

func newFrozenSpecs(max int) *frozenSpecs {
	return &frozenSpecs{max: max, maxBytes: frozenBytes, m: map[string]*frozenJob{}}
}

// frozenSpec is the attempt's job spec, and its program when admission
// derived it in this boot (nil: verification derives it from the bundle).
func (s *Supervisor) frozenSpec(a *active) (*protocol.JobSpec, *savedProgram, error) {
	if f := s.frozen.get(a.job.ID, a.job.SpecDigest); f != nil {
		return f.spec, f.program, nil
	}
	spec, err := protocol.ParseJobSpec(a.spec)
	return spec, nil, err
}

// admitted remembers what admission derived from a job it stored with
// the spec digest digest. The entry shares adm's memory, which nobody
// changes after.
func (c *frozenSpecs) admitted(adm *protocol.AdmittedJob, digest string) {
	spec := adm.Spec
	f := &frozenJob{digest: digest, canonical: adm.Canonical, spec: &spec,
		program: &savedProgram{tokens: adm.Program.Tokens, identity: adm.Identity()}}
	f.size = int64(len(f.canonical) + len(spec.Artifact) + len(spec.Program.Bundle) + len(f.program.tokens))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(spec.JobID)
	if len(c.m) >= c.max {
		for k := range c.m {
			c.forget(k)
			break
		}
	}
	if c.bytes+f.size > c.maxBytes {
		return
	}
	c.m[spec.JobID] = f
	c.bytes += f.size
}

// get returns what was derived from the frozen spec of job id whose
// digest is digest, or nil.
func (c *frozenSpecs) get(id, digest string) *frozenJob {
	c.mu.Lock()
	f := c.m[id]
	c.mu.Unlock()
	if f == nil || f.digest != digest {
		return nil
	}
	return f
}

// canonical is the frozen spec of job id whose digest is digest, or nil.
func (c *frozenSpecs) canonical(id, digest string) []byte {
	if f := c.get(id, digest); f != nil {
		return f.canonical
	}
	return nil
}

// ended forgets a job that will have no more attempts.
func (c *frozenSpecs) ended(id string) {
	c.mu.Lock()
	c.forget(id)
	c.mu.Unlock()
}

// forget drops id's entry; c.mu is held.
func (c *frozenSpecs) forget(id string) {
	if f, ok := c.m[id]; ok {
		c.bytes -= f.size
		delete(c.m, id)
	}
}
