package cert

// tape is the witness as the prover writes it: a list of blocks, each
// filled before the next is allocated, so that it grows without copying.
// A slice grown by append copies itself at each growth and holds the old
// array and the new one at once (2.25 times its capacity); the blocks
// hold the tape once, and the certificate copies them once, at the end,
// into an array of its exact size (bytes).
type tape struct {
	full  [][]byte // filled blocks
	cur   []byte   // the block being filled
	size  int      // bytes in full
	alloc int      // bytes of every block
}

// Blocks double from tapeFirstBlock to tapeMaxBlock: a short certificate
// allocates little, a long one wastes at most one block.
const (
	tapeFirstBlock = 1 << 10
	tapeMaxBlock   = 1 << 20
	// maxVarint is the longest uvarint.
	maxVarint = 10
)

// len is the tape's length in bytes.
func (t *tape) len() int { return t.size + len(t.cur) }

// allocated is what the blocks cost.
func (t *tape) allocated() int { return t.alloc }

// uvarint appends v.
func (t *tape) uvarint(v uint64) {
	if cap(t.cur)-len(t.cur) < maxVarint {
		t.next()
	}
	if v < 0x80 {
		t.cur = append(t.cur, byte(v))
		return
	}
	t.cur = appendUvarint(t.cur, v)
}

// next starts a new block.
func (t *tape) next() {
	size := tapeFirstBlock
	if t.cur != nil {
		t.full = append(t.full, t.cur)
		t.size += len(t.cur)
		size = min(2*cap(t.cur), tapeMaxBlock)
	}
	t.cur = make([]byte, 0, size)
	t.alloc += size
}

// appendTo appends the tape to b.
func (t *tape) appendTo(b []byte) []byte {
	for _, blk := range t.full {
		b = append(b, blk...)
	}
	return append(b, t.cur...)
}
