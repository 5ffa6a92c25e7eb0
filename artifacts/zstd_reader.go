package artifacts

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// frameHeaderMax is the longest zstd frame header (RFC 8878 §3.1.1.1):
// magic 4, descriptor 1, window 1, dictionary id 4, content size 8.
// zstd.HeaderMaxSize is one byte shorter, so a header with both a
// dictionary id field and an 8-byte size, read in HeaderMaxSize bytes,
// failed to decode (ErrCorrupt) where the same frame in memory was
// judged on its declared size (ErrTooLarge): FuzzDecompressorFrom.
const frameHeaderMax = 18

// readerBuffer is what a Decompressor reading from an io.Reader buffers
// of its input: the frame's block headers are read three bytes at a
// time, which the buffer turns into few reads of the file.
const readerBuffer = 64 << 10

// NewDecompressorFrom is NewDecompressor for a frame of n bytes read
// from r as it is decoded (an artifact's file: OpenFile), never held
// whole: the same header checks (n stands for the input's length), a
// window of at most MaxWindow, and the same end: r must end exactly
// where the frame does, a byte after it is ErrCorrupt (see frameGuard).
// An error of r (ErrTooLarge from a Reader, an I/O error) is returned
// as it is, wrapped, not as ErrCorrupt. The Decompressor holds its
// window and a buffer of 64 KiB, whatever n.
func NewDecompressorFrom(r io.Reader, n, maxSize int64) (*Decompressor, error) {
	return newDecompressorFrom(r, n, maxSize, false)
}

// NewStreamDecompressorFrom is NewStreamDecompressor for a frame of n
// bytes read from r, as NewDecompressorFrom reads it.
func NewStreamDecompressorFrom(r io.Reader, n, limit int64) (*Decompressor, error) {
	return newDecompressorFrom(r, n, limit, true)
}

func newDecompressorFrom(r io.Reader, n, limit int64, unsized bool) (*Decompressor, error) {
	const op = "decompress stream"
	if n < 0 {
		return nil, fmt.Errorf("artifacts: %s: negative input size %d", op, n)
	}
	head := make([]byte, min(n, frameHeaderMax))
	if _, err := io.ReadFull(r, head); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("input ends before its %d bytes: %w", n, ErrCorrupt)
		}
		return nil, fmt.Errorf("artifacts: %s: read frame header: %w", op, err)
	}
	h, size, err := checkHeader(op, head, n, limit, unsized)
	if err != nil {
		return nil, err
	}
	var lim uint64
	if size == unknownSize {
		lim = uint64(limit)
	}
	in := &frameGuard{r: bufio.NewReaderSize(r, readerBuffer), checksum: h.HasCheckSum}
	in.pending = head[h.HeaderSize:]
	d, err := newDecompressor(head, in, h, size, lim, -1, 0)
	if err != nil {
		return nil, err
	}
	d.in = in
	return d, nil
}

// frameGuard passes the body of one zstd frame (what follows its
// header) from r to the decoder and ends it where the frame ends, by
// following its block headers as they pass (frameEnd's walk, made as the
// bytes go by): the decoder never sees what follows the frame, and a
// byte after it is ErrCorrupt, as parseHeader refuses trailing bytes of
// a frame in memory. An error of r is kept (err) for the Decompressor to
// report instead of the decoder's view of it.
type frameGuard struct {
	r        io.Reader
	pending  []byte // bytes read with the header, not yet passed on
	checksum bool   // the frame ends with a 4-byte checksum

	header [3]byte // the block header being read
	got    int     // how much of it
	left   int     // bytes of the current block (or checksum) still to pass
	last   bool    // the current block is the frame's last
	tail   bool    // the checksum is passing
	done   bool    // the frame ended
	err    error   // sticky: r's error, a byte after the frame, or io.EOF
}

func (g *frameGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if g.done {
		return 0, g.end()
	}
	var want int
	if g.left > 0 {
		want = min(len(p), g.left)
	} else {
		want = min(len(p), len(g.header)-g.got)
	}
	n, err := g.read(p[:want])
	if g.left > 0 {
		g.left -= n
		if g.left == 0 {
			g.blockEnded()
		}
	} else {
		g.got += copy(g.header[g.got:], p[:n])
		if g.got == len(g.header) {
			g.startBlock()
		}
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			// The input ends inside the frame: the decoder says how.
			err = io.ErrUnexpectedEOF
		}
		g.err = err
		return n, err
	}
	return n, nil
}

// read reads the pending header bytes first, then r.
func (g *frameGuard) read(p []byte) (int, error) {
	if len(g.pending) > 0 {
		n := copy(p, g.pending)
		g.pending = g.pending[n:]
		return n, nil
	}
	n, err := g.r.Read(p)
	if n > 0 && errors.Is(err, io.EOF) {
		err = nil // seen at the next read
	}
	return n, err
}

func (g *frameGuard) startBlock() {
	bh := int(g.header[0]) | int(g.header[1])<<8 | int(g.header[2])<<16
	g.got, g.last = 0, bh&1 == 1
	switch (bh >> 1) & 3 {
	case 1: // RLE: one byte, repeated
		g.left = 1
	case 3: // reserved: the decoder refuses it
		g.left = 0
	default: // raw or compressed: the block's size
		g.left = bh >> 3
	}
	if g.left == 0 {
		g.blockEnded()
	}
}

func (g *frameGuard) blockEnded() {
	switch {
	case !g.last:
	case g.checksum && !g.tail:
		g.tail, g.left = true, 4
	default:
		g.done = true
	}
}

// end checks, once the frame has passed, that its input ends there.
func (g *frameGuard) end() error {
	var one [1]byte
	for range 64 {
		n, err := g.read(one[:])
		switch {
		case n > 0:
			g.err = fmt.Errorf("artifacts: decompress stream: bytes after the frame (an artifact is one frame, nothing after it): %w", ErrCorrupt)
			return g.err
		case errors.Is(err, io.EOF):
			g.err = io.EOF
			return g.err
		case err != nil:
			g.err = err
			return g.err
		}
	}
	g.err = fmt.Errorf("artifacts: decompress stream: the input does not end: %w", io.ErrNoProgress)
	return g.err
}

// failure is the input's own failure, if it had one: what a
// Decompressor reports instead of the decoder's error.
func (g *frameGuard) failure() error {
	if g == nil || g.err == nil || errors.Is(g.err, io.EOF) || errors.Is(g.err, io.ErrUnexpectedEOF) {
		return nil
	}
	return g.err
}
