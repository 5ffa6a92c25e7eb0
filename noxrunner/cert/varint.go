package cert

import "encoding/binary"

// reader decodes minimal LEB128 varints; every non-minimal or truncated
// encoding is a rejection, which is what keeps the format canonical.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = rejectf("%s at byte %d", what, r.pos)
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	// Minimal: the last byte of a multi-byte varint is never zero.
	if n > 1 && r.b[r.pos+n-1] == 0 {
		r.fail("non-minimal varint")
		return 0
	}
	r.pos += n
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.pos) {
		r.fail("truncated")
		return nil
	}
	out := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return out
}

// count reads a length and checks it against max and against what is left
// (each element takes at least minBytes), before anything is allocated.
func (r *reader) count(max uint64, minBytes int, what string) int {
	n := r.uvarint()
	if r.err != nil {
		return 0
	}
	if n > max {
		r.fail(what + " count over its limit")
		return 0
	}
	if n*uint64(minBytes) > uint64(len(r.b)-r.pos) {
		r.fail(what + " count larger than the data")
		return 0
	}
	return int(n)
}

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
