package reduce

import (
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// What a run holds. Config.MaxCells bounds the memory a run keeps alive,
// not what it builds: a loop that builds a pair per step and drops it holds
// almost nothing however long it runs, and a program that builds data
// without end is stopped soon after it holds more than the bound.
//
// The machine takes a census (noun.Census) of what its run holds every
// so often, triggered by the pairs it builds, as a collector is: after a
// census that counted H cells, the next one comes once max(H,
// censusFloor) more pairs have been built, so a census costs O(1)
// amortized per pair built, and at the latest once H + built could pass
// the bound by its slack (a quarter), so that no run holds more than
// MaxCells·5/4 undetected. A run over MaxCells at a census ends with
// ErrCellLimit. Census points depend only on the run (pairs built), so
// the verdict is deterministic.
//
// The census counts what is reachable from the run's roots: its object
// and formula, and the values its frames hold while a child runs (the
// first operand of a binary pattern while the second is evaluated, the
// object and formula a compose evaluates, a call's extended subject),
// kept per depth in pend. Everything else a frame refers to is reachable
// from its parent's roots.

// censusFloor is the fewest pairs built between two censuses (2.5 MiB of
// cells): a run that holds little is counted rarely.
const censusFloor = 1 << 15

// trackAfter is how many pairs a run builds before its frames record
// their roots: most runs build fewer and pay nothing for the census. The
// frames that were running when recording began may hold values their
// census cannot see; those consist of pairs built before it, which
// every census therefore counts as held, all of them (untracked).
const trackAfter = 1 << 12

// CellBytes is what one held cell costs a process: the 80-byte cell,
// room for the collector to work in (Go's heap grows to twice what is
// live before it collects) and the census's set entry for it. A host
// turns a memory limit into MaxCells with it.
const CellBytes = 192

// pendingRoots are the values one frame holds while a child runs (pairs
// only: an atom holds no memory): a alone (on 1), or a and b (on 3). A
// frame that lets go only clears on, a byte, rather than the pointers,
// whose every write costs a write barrier while the collector marks; the
// census skips what is not on and drops the stale pointers, so that no
// slot keeps a value alive for longer than one census interval.
type pendingRoots struct {
	a, b noun.Noun
	on   uint8
}

// A frame holds x while its child runs with
//
//	if p := m.slot(depth); p != nil {
//		p.hold(x)
//	}
//
// written out in the evaluator (a method doing it all would not be
// inlined), and lets go with release. Until the run records roots
// (tracking), both are a compare.

// hold keeps x (on 1). A pointer is written only when it changes: a
// write costs a write barrier while the collector marks, and a frame at
// one depth often holds the same value again (the formula of a loop).
func (p *pendingRoots) hold(x noun.Noun) {
	if p.a != x {
		p.a = x
	}
	p.on = 1
}

// hold2 keeps x and y (on 3).
func (p *pendingRoots) hold2(x, y noun.Noun) {
	if p.a != x {
		p.a = x
	}
	if p.b != y {
		p.b = y
	}
	p.on = 3
}

func (m *Machine) release(depth int) {
	if depth < len(m.pend) {
		m.pend[depth].on = 0
	}
}

// slot is the pending roots of the frame at depth, nil while the run
// records none. A frame runs a pattern only at a depth within the
// limit, and the run's slots, made when it starts recording, cover
// them all: the evaluator pays one compare while it does not record.
func (m *Machine) slot(depth int) *pendingRoots {
	if depth < len(m.pend) {
		return &m.pend[depth]
	}
	return nil
}

// startCensus sets up the census of a run on object and formula.
func (m *Machine) startCensus(object, formula noun.Noun) {
	m.base = pendingRoots{a: object, b: formula}
	clear(m.pend)
	// A machine that recorded in an earlier run records from the start.
	m.tracking = len(m.pend) > 0
	m.untracked, m.held, m.censuses = 0, 0, 0
	m.runStart = m.heap.Count()
	m.censusAt = m.runStart
	m.nextCensus = ^uint64(0)
	if m.maxCells == 0 {
		return
	}
	if m.maxCells/16 < trackAfter || m.witnesses {
		// A small bound records roots from the start, so that what
		// the frames of the first trackAfter pairs hold is counted,
		// not assumed; so does a run whose provider can answer calls,
		// since a witness is not made of pairs the run built.
		m.track()
	}
	if m.tracking {
		m.nextCensus = m.runStart + m.censusGap(0)
	} else {
		m.nextCensus = m.runStart + trackAfter
	}
}

// track starts recording roots: a slot for every depth a pattern runs
// at (40 KiB at the profile's depth limit), kept for the machine's next
// runs.
func (m *Machine) track() {
	m.tracking = true
	if len(m.pend) <= m.depthLimit {
		m.pend = make([]pendingRoots, m.depthLimit+1)
	}
}

// censusGap is how many pairs may be built before the census after one
// that counted held (≤ MaxCells) cells.
func (m *Machine) censusGap(held uint64) uint64 {
	slack := max(m.maxCells/4, 1)
	return min(max(held, censusFloor), m.maxCells-held+slack)
}

// census counts what the run holds, with fresh (the pair just built) as
// one more root. false means the run is aborted: over its bound, or
// cancelled while counting. The first one starts the recording of roots.
func (m *Machine) census(fresh noun.Noun) bool {
	if !m.tracking {
		m.track()
		// Everything built so far.
		m.untracked = m.heap.Count() - m.runStart
	}
	roots := append(m.roots[:0], m.base.a, m.base.b, fresh)
	for i := range m.pend {
		p := &m.pend[i]
		if p.on&1 != 0 {
			roots = append(roots, p.a)
		} else if p.a.IsPair() {
			p.a = noun.Noun{}
		}
		if p.on&2 != 0 {
			roots = append(roots, p.b)
		} else if p.b.IsPair() {
			p.b = noun.Noun{}
		}
	}
	held, ok := m.cells.Count(roots, m.maxCells-min(m.untracked, m.maxCells), m.stop)
	clear(roots)
	m.roots = roots[:0]
	m.censuses++
	if !ok {
		return false // m.stop set m.abort
	}
	held += m.untracked
	m.held = held
	if held > m.maxCells {
		m.abort = fmt.Errorf("%w: the run holds more than %d cells (%d bytes)", ErrCellLimit, m.maxCells, m.maxCells*CellBytes)
		return false
	}
	m.censusAt = m.heap.Count()
	m.nextCensus = m.censusAt + m.censusGap(held)
	return true
}

// repace sets the next census for a bound changed during the run
// (SetLimits): where the new bound puts it after the last census, and at
// the next pair at the latest. A run that records no roots yet takes its
// first census then, which counts all it built before as held.
func (m *Machine) repace() {
	switch {
	case m.maxCells == 0:
		m.nextCensus = ^uint64(0)
	case !m.tracking || m.held >= m.maxCells:
		m.nextCensus = m.heap.Count()
	default:
		m.nextCensus = m.censusAt + m.censusGap(m.held)
	}
}
