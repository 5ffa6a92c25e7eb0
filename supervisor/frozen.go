package supervisor

import (
	"bytes"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// frozenJob is what admission derived from a job's frozen spec: the spec
// parsed, and the program's canonical tokens and identity derived from the
// bundle. Shared between goroutines: read only.
type frozenJob struct {
	canonical []byte // the frozen spec bytes all of this was derived from
	spec      *protocol.JobSpec
	program   *savedProgram
}

// savedProgram is the saved job's program as verification needs it.
type savedProgram struct {
	tokens   []byte
	identity protocol.ProgramIdentity
}

// frozenSpecs keeps each admitted job's frozenJob until the job ends, so
// that its attempts do not parse the frozen spec again and verification
// does not parse the bundle and hash the formula again (a spec parse and a
// hemera digest per attempt). An entry answers only for the exact bytes it
// was derived from, which are the bytes the store holds: a spec is never
// changed after admission. A job it does not hold (admitted by an earlier
// boot, or dropped) is parsed from the store as before.
type frozenSpecs struct {
	mu  sync.Mutex
	max int
	m   map[string]*frozenJob
}

func newFrozenSpecs(max int) *frozenSpecs {
	return &frozenSpecs{max: max, m: map[string]*frozenJob{}}
}

// frozenSpec is the attempt's job spec, and its program when admission
// derived it in this boot (nil: verification derives it from the bundle).
func (s *Supervisor) frozenSpec(a *active) (*protocol.JobSpec, *savedProgram, error) {
	if f := s.frozen.get(a.job.ID, a.spec); f != nil {
		return f.spec, f.program, nil
	}
	spec, err := protocol.ParseJobSpec(a.spec)
	return spec, nil, err
}

// admitted remembers what admission derived from a job it stored.
func (c *frozenSpecs) admitted(adm *protocol.AdmittedJob) {
	spec := adm.Spec
	f := &frozenJob{canonical: bytes.Clone(adm.Canonical), spec: &spec,
		program: &savedProgram{tokens: adm.Program.Tokens, identity: adm.Identity()}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[spec.JobID]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[spec.JobID] = f
}

// get returns what was derived from exactly the frozen spec canonical of
// job id, or nil.
func (c *frozenSpecs) get(id string, canonical []byte) *frozenJob {
	c.mu.Lock()
	f := c.m[id]
	c.mu.Unlock()
	if f == nil || !bytes.Equal(f.canonical, canonical) {
		return nil
	}
	return f
}

// ended forgets a job that will have no more attempts.
func (c *frozenSpecs) ended(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}
