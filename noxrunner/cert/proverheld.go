package cert

import "github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"

// What a prover holds, for ProveOptions.MaxMemory.
const (
	// ProverNodeBytes is what one node of the prover's table costs at
	// most: its entries in the table's arrays and index, with their
	// growth (TestProverMemoryPerNode measures what a table's growth
	// allocates per node). It is the verifier's table, and the bound
	// is the verifier's: a prover never records a table its verifier
	// could not hold.
	ProverNodeBytes = NodeBytes
	// memoSlotHeld is what a slot of the memo of the run's pairs costs
	// at most: 16 bytes, and half as much again while it doubles (the
	// old slots and the new ones are both alive). The memo keeps its
	// slots across censuses, so it is charged by slot, not by entry.
	// (The pairs it keeps alive are at most one census interval's,
	// which reduce.CellBytes's headroom covers.)
	memoSlotHeld = memoSlotBytes * 3 / 2
	// memoryEvery is how many steps pass between checks of MaxMemory:
	// a step adds at most a few nodes and bytes.
	memoryEvery = 64
	// tapeCopies is what the tape costs, in multiples of its blocks:
	// the blocks, and the certificate they are copied into at the end
	// (with the statement, at most MaxStatementBytes more).
	tapeCopies = 2
)

// held is the prover's estimate of what the run and its record hold.
func (p *prover) held() uint64 {
	if p.v2 != nil {
		return p.heldV2()
	}
	return p.m.Stats().Held*reduce.CellBytes +
		uint64(p.t.len())*ProverNodeBytes +
		uint64(len(p.cells.slots))*memoSlotHeld +
		tapeCopies*uint64(p.tape.allocated()) + uint64(MaxStatementBytes)
}

// certificate is the statement, the call count and the tape, in one
// array of its exact size (the tape's blocks are copied once), or
// ErrTooLarge before anything is allocated.
func (p *prover) certificate(st *Statement) ([]byte, error) {
	head := appendUvarint(appendStatement(nil, st), p.calls)
	size := len(head) + p.tape.len()
	if uint64(size) > p.maxBytes {
		return nil, tooLargef("the uncompressed certificate would be %d bytes, its bound is %d", size, p.maxBytes)
	}
	b := make([]byte, 0, size)
	return p.tape.appendTo(append(b, head...)), nil
}
