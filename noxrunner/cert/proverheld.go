package cert

import "github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"

// What a prover holds, for ProveOptions.MaxMemory.
const (
	// ProverNodeBytes is what one node of the prover's table costs at
	// most: its entries in the table's arrays and index maps, with their
	// growth slack (206 bytes allocated per node over a table's growth,
	// TestProverMemoryPerNode). It is the verifier's table.
	ProverNodeBytes = NodeBytes
	// memoEntryBytes is one entry of the memo of the run's pairs, with
	// its map's growth slack. (The pairs it keeps alive are at most one
	// census interval's, which reduce.CellBytes's headroom covers.)
	memoEntryBytes = 48
	// memoryEvery is how many steps pass between checks of MaxMemory:
	// a step adds at most a few nodes and bytes.
	memoryEvery = 64
	// tapeGrowth is what the tape costs, in quarters of its capacity:
	// when it grows (by a quarter, as append grows a large slice) the
	// old array and the new one are both alive.
	tapeGrowth = 9
	// frontAfter is the tape length past which the prover moves its tape
	// behind room for the statement (makeFront): a long certificate is
	// then finished in place instead of being copied whole.
	frontAfter = 1 << 18
)

// held is the prover's estimate of what the run and its record hold.
func (p *prover) held() uint64 {
	return p.m.Stats().Held*reduce.CellBytes +
		uint64(p.t.len())*ProverNodeBytes +
		uint64(len(p.cells))*memoEntryBytes +
		tapeGrowth*uint64(cap(p.tape))/4
}

// makeFront moves the tape behind MaxStatementBytes of room (and ten for
// the call count), which any statement fits in.
func (p *prover) makeFront() {
	front := MaxStatementBytes + 10
	b := make([]byte, front+len(p.tape), front+2*len(p.tape))
	copy(b[front:], p.tape)
	p.tape, p.front = b, front
}

// certificate is the statement, the call count and the tape: written into
// the room before the tape when there is some, else copied together.
func (p *prover) certificate(st *Statement) []byte {
	head := appendUvarint(appendStatement(nil, st), p.calls)
	if p.front == 0 {
		return append(head, p.tape...)
	}
	start := p.front - len(head)
	copy(p.tape[start:], head)
	return p.tape[start:]
}
