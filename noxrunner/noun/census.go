package noun

// censusPoll is how many cells a census visits between calls of its stop
// function: a census of millions of cells must not hold off a
// cancellation for long.
const censusPoll = 1 << 12

// Census measures what a set of roots keeps alive: the memory a run
// holds, as opposed to what it has built (most of which the collector has
// freed or will free). It is what a host bounds a run's memory with, in
// any process, without asking the Go runtime (whose heap is shared by
// every run in a process): the count depends only on the nouns, so the
// same run counts the same at the same point every time.
//
// The unit is a cell (80 bytes). Every cell is its own allocation (Heap),
// so the collector keeps exactly the cells reachable from the run's
// roots, and those are what a census counts. A Census keeps its scratch
// space between counts; it is not safe for concurrent use.
type Census struct {
	seen  map[*Cell]struct{}
	stack []*Cell
}

// Count walks every pair reachable from roots once and returns what they
// hold, in cells. It stops as soon as the count passes limit (the count
// it returns is then above limit, not the whole), and when stop (if not
// nil) reports true, polled every few thousand cells (ok is then false).
// Its scratch space is at most a few words per cell it counted.
func (s *Census) Count(roots []Noun, limit uint64, stop func() bool) (held uint64, ok bool) {
	if s.seen == nil {
		s.seen = map[*Cell]struct{}{}
	}
	defer s.reset()
	stack := s.stack[:0]
	for _, r := range roots {
		if r.c != nil {
			if _, dup := s.seen[r.c]; !dup {
				s.seen[r.c] = struct{}{}
				stack = append(stack, r.c)
			}
		}
	}
	visited := 0
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		visited++
		if visited%censusPoll == 0 && stop != nil && stop() {
			s.stack = stack
			return held, false
		}
		held++
		if held > limit {
			s.stack = stack
			return held, true
		}
		for _, child := range [2]*Cell{c.head.c, c.tail.c} {
			if child == nil {
				continue
			}
			if _, dup := s.seen[child]; !dup {
				s.seen[child] = struct{}{}
				stack = append(stack, child)
			}
		}
	}
	s.stack = stack
	return held, true
}

// reset empties the scratch space, keeping its capacity for the next
// count, and drops the references it held: between counts a Census keeps
// nothing alive.
func (s *Census) reset() {
	clear(s.seen)
	clear(s.stack[:cap(s.stack)])
	s.stack = s.stack[:0]
}
