package hostact

import (
	"bufio"
	"bytes"
	"errors"
	"hash/maphash"
	"io"
	"os"
	"strconv"
)

// The emit log's own record of what it holds: the operation of every
// line, so that an operation is never appended twice. The store's claims
// keep that rule while the store is whole; the log keeps it when the
// store is not (a backup restored over it, a crash between the line and
// its outcome that an owner reconciles wrongly), because the line itself
// is the effect.

// LineIDs locate a line of the log: the operation it is the effect of,
// and the attempt that wrote it.
type LineIDs struct {
	Operation string
	Attempt   uint32
}

// prefixBytes is how much of a line is read for its ids: the fields
// before the argument (neuron, prog, invocation, operation, attempt) are
// ids of at most 64 characters, so they fit with room to spare.
const prefixBytes = 4 << 10

// scanLines reads r from its start and calls fn with each whole line's
// offset and first bytes (at most prefixBytes, without the newline). It
// returns the bytes read and where the last whole line ends.
func scanLines(r io.Reader, fn func(off int64, prefix []byte)) (size, lastEnd int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var prefix []byte
	start := int64(0)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(prefix) < prefixBytes {
			prefix = append(prefix, chunk[:min(len(chunk), prefixBytes-len(prefix))]...)
		}
		size += int64(len(chunk))
		switch {
		case err == nil:
			fn(start, bytes.TrimSuffix(prefix, []byte{'\n'}))
			prefix, start, lastEnd = prefix[:0], size, size
		case errors.Is(err, bufio.ErrBufferFull):
			// A long line (a large argument): its prefix is kept, the
			// rest read past.
		case errors.Is(err, io.EOF):
			return size, lastEnd, nil
		default:
			return size, lastEnd, err
		}
	}
}

// parseLineIDs finds the operation and attempt in the first bytes of a
// line as Emit writes it (encoding/json of EmitLine: ids are plain hex
// strings, never escaped). A line it cannot read gives zero ids.
func parseLineIDs(prefix []byte) LineIDs {
	var ids LineIDs
	ids.Operation, _ = stringField(prefix, `"operation":"`)
	if a, ok := stringField(prefix, `"attempt":"`); ok {
		if n, err := strconv.ParseUint(a, 10, 32); err == nil {
			ids.Attempt = uint32(n)
		}
	}
	return ids
}

// stringField is the value of the first string field named by key
// (`"name":"`), when it has no escapes.
func stringField(b []byte, key string) (string, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return "", false
	}
	v := b[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 || bytes.IndexByte(v[:j], '\\') >= 0 {
		return "", false
	}
	return string(v[:j]), true
}

// opIndex finds the line of an operation. It keeps 8 bytes of hash and
// the line number per line (an operation id is 64 characters; a million
// lines cost about 30 MB rather than 100), and reads the line back to
// compare the id on a hit: only a second attempt at an operation, or a
// hash collision, reads the file.
type opIndex struct {
	seed    maphash.Seed
	lines   map[uint64]uint64 // hash of the operation → its line
	offsets []int64           // line n starts at offsets[n-1]
	// spill holds the operations whose hash another one had first.
	spill map[string]uint64
}

func newOpIndex() opIndex {
	return opIndex{seed: maphash.MakeSeed(), lines: map[uint64]uint64{}}
}

// add records that line n, at off, is operation op's.
func (x *opIndex) add(op string, off int64, n uint64) {
	x.offsets = append(x.offsets, off)
	if op == "" {
		return // a line whose id could not be read: nothing to find it by
	}
	h := maphash.String(x.seed, op)
	if _, taken := x.lines[h]; !taken {
		x.lines[h] = n
		return
	}
	if x.spill == nil {
		x.spill = map[string]uint64{}
	}
	if _, ok := x.spill[op]; !ok {
		x.spill[op] = n
	}
}

// find reports whether op has a line in f, and its number. A line that
// cannot be read back to compare counts as op's: the log errs on the
// side of not writing.
func (x *opIndex) find(f *os.File, op string) (uint64, bool) {
	if op == "" {
		return 0, false
	}
	if n, ok := x.spill[op]; ok {
		return n, true
	}
	n, ok := x.lines[maphash.String(x.seed, op)]
	if !ok {
		return 0, false
	}
	buf := make([]byte, prefixBytes)
	k, err := f.ReadAt(buf, x.offsets[n-1])
	if err != nil && !errors.Is(err, io.EOF) {
		return n, true
	}
	line := buf[:k]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	got := parseLineIDs(line).Operation
	return n, got == "" || got == op
}
