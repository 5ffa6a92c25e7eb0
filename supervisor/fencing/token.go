package fencing

import (
	"slices"
	"sync/atomic"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// DispatchToken is the single-use permission to dispatch one prepared
// attempt. Only Prepare makes one. It is a handle: copies share one
// consumed flag, so whichever copy Dispatch takes first consumes them
// all. Its public metadata can be read and copied but cannot make a
// token. The durable one-use claim is what guarantees one dispatch even
// if two tokens existed; the token keeps a process from trying.
type DispatchToken struct{ p *permit }

type permit struct {
	engine   *Engine
	consumed atomic.Bool
	meta     Dispatch
}

// Dispatch is a token's public metadata: what was prepared, for which
// worker and generation, under which authorization.
type Dispatch struct {
	Neuron        neuron.ID                 `json:"neuron"`
	Network       string                    `json:"network"`
	Prog          string                    `json:"prog"`
	Invocation    string                    `json:"invocation"`
	Operation     string                    `json:"operation"`
	Attempt       uint32                    `json:"attempt"`
	Policy        neuron.Particle           `json:"policy"`
	Epoch         uint64                    `json:"epoch,string"`
	Tag           uint64                    `json:"tag,string"`
	Arguments     []byte                    `json:"arguments"` // canonical tokens of the argument
	Authorization []byte                    `json:"authorization"`
	Executor      protocol.WorkerDescriptor `json:"executor"`
	Generation    uint64                    `json:"generation,string"`
}

func (d Dispatch) clone() Dispatch {
	d.Arguments = slices.Clone(d.Arguments)
	d.Authorization = slices.Clone(d.Authorization)
	d.Executor.Acts = slices.Clone(d.Executor.Acts)
	return d
}

// Metadata is a copy of the token's public metadata (zero for the zero
// token).
func (t DispatchToken) Metadata() Dispatch {
	if t.p == nil {
		return Dispatch{}
	}
	return t.p.meta.clone()
}

// Consumed reports whether the token (any copy of it) was dispatched.
func (t DispatchToken) Consumed() bool { return t.p != nil && t.p.consumed.Load() }

// consume takes the token; false if it is the zero token, another
// engine's, or already consumed.
func (t DispatchToken) consume(e *Engine) (Dispatch, bool) {
	if t.p == nil || t.p.engine != e || !t.p.consumed.CompareAndSwap(false, true) {
		return Dispatch{}, false
	}
	return t.p.meta.clone(), true
}
