package cert

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// reader decodes minimal LEB128 varints; every non-minimal or truncated
// encoding is a rejection, which is what keeps the format canonical.
//
// It reads either a certificate held whole (src nil: b is all of it) or
// one streamed from src, whose length (size) is known before the first
// byte: b is then a window of the stream, refilled as it is read, so a
// verification holds at most a window of the certificate and reads no
// further than its first failing step.
type reader struct {
	b   []byte // b[pos:] is unread
	pos int
	err error

	src  io.Reader // nil: b is the whole certificate
	off  int64     // offset of b[0] in the certificate (src only)
	size int64     // the certificate's length (src only)
	// open: the length is not known (a v2 certificate read to its
	// end); size is then the largest int64 until the source ends.
	open bool
}

// streamWindow is how much of a streamed certificate the reader holds:
// more than the longest field (the statement's program tokens), and few
// refills per megabyte.
const streamWindow = 64 << 10

// maxIdleReads is how many empty reads in a row end a source (as bufio).
const maxIdleReads = 100

// newStreamReader reads a certificate of size bytes from src; size < 0:
// of unknown length, which ends where src ends.
func newStreamReader(src io.Reader, size int64) *reader {
	open := size < 0
	if open {
		size = math.MaxInt64
	}
	return &reader{src: src, size: size, open: open, b: make([]byte, 0, min(size, streamWindow))}
}

// peek returns up to n unread bytes without reading them.
func (r *reader) peek(n int) []byte {
	if r.fill(n); r.err != nil {
		return nil
	}
	return r.b[r.pos:min(r.pos+n, len(r.b))]
}

// buffered is how many bytes are read from the source and not yet used.
func (r *reader) buffered() int { return len(r.b) - r.pos }

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = rejectf("%s at byte %d", what, r.at())
	}
}

// at is the offset of the next byte in the certificate.
func (r *reader) at() int64 { return r.off + int64(r.pos) }

// rest is how many bytes of the certificate are left.
func (r *reader) rest() uint64 {
	if r.src == nil {
		return uint64(len(r.b) - r.pos)
	}
	return uint64(r.size - r.at())
}

// fill makes at least need bytes readable at b[pos:] (fewer at the end of
// the certificate), reading no further than its length. A read error
// ends the verification: it is recorded and wrapped.
func (r *reader) fill(need int) {
	if r.src == nil || len(r.b)-r.pos >= need || r.err != nil {
		return
	}
	if need > cap(r.b) {
		r.b = append(make([]byte, 0, need), r.b...)
	}
	kept := copy(r.b[:cap(r.b)], r.b[r.pos:])
	r.off += int64(r.pos)
	r.b, r.pos = r.b[:kept], 0
	for idle := 0; len(r.b) < need; {
		left := r.size - r.off - int64(len(r.b))
		if left <= 0 {
			return
		}
		room := r.b[len(r.b):cap(r.b)]
		room = room[:min(int64(len(room)), left)]
		n, err := r.src.Read(room)
		r.b = r.b[:len(r.b)+n]
		if n == 0 && err == nil {
			// A source that returns neither data nor an error keeps
			// being asked, a bounded number of times.
			if idle++; idle == maxIdleReads {
				err = io.ErrNoProgress
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && r.open {
				// The length is known now.
				r.size, r.open = r.off+int64(len(r.b)), false
				return
			}
			if errors.Is(err, io.EOF) && int64(len(r.b)) < r.size-r.off {
				r.fail("certificate ends before its declared length")
			} else if !errors.Is(err, io.EOF) {
				r.err = fmt.Errorf("reading the certificate at byte %d: %w", r.off+int64(len(r.b)), err)
			}
			return
		}
	}
}

// ended checks, once the certificate's length is read, that its source
// ends there (for a decompressing source: that the frame decoded to
// exactly that length and passed its checksum).
func (r *reader) ended() {
	if r.src == nil || r.err != nil {
		return
	}
	var one [1]byte
	for range maxIdleReads {
		n, err := r.src.Read(one[:])
		switch {
		case n > 0:
			r.fail("certificate continues past its declared length")
			return
		case errors.Is(err, io.EOF):
			return
		case err != nil:
			r.err = fmt.Errorf("reading the end of the certificate: %w", err)
			return
		}
	}
	r.fail("certificate source does not end")
}

func (r *reader) uvarint() uint64 {
	// Most varints of a witness are one byte (a back-reference to a
	// recent node, a small atom): read those without the general decode
	// (result reads them inline).
	if p := r.pos; p < len(r.b) && r.b[p] < 0x80 && r.err == nil {
		r.pos = p + 1
		return uint64(r.b[p])
	}
	if r.err != nil {
		return 0
	}
	if r.src != nil && len(r.b)-r.pos < binary.MaxVarintLen64 {
		if r.fill(binary.MaxVarintLen64); r.err != nil {
			return 0
		}
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

// bytes returns the next n bytes. Streamed, they stay valid only until
// the next read.
func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.rest() {
		r.fail("truncated")
		return nil
	}
	if r.fill(int(n)); r.err != nil {
		return nil
	}
	if n > uint64(r.buffered()) {
		// A source of unknown length ended.
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
	if r.open {
		// Of unknown length: read what the count needs (at most a
		// statement's field), so that a source that ends before it
		// fails here, as a certificate of known length does.
		if r.fill(int(n) * minBytes); r.err != nil {
			return 0
		}
	}
	if n*uint64(minBytes) > r.rest() {
		r.fail(what + " count larger than the data")
		return 0
	}
	return int(n)
}

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
