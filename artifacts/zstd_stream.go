package artifacts

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// MaxWindow is the longest history a Decompressor keeps: a frame is
// decoded with a window of at most 8 MiB, the window zstd's format
// recommends every decoder support (and the one Compress's encoder
// uses), whatever the frame declares. So reading a frame as a stream
// costs at most about MaxWindow of memory, however large its content.
const MaxWindow = 8 << 20

// pooledWindow is the largest window of a decoder put back for reuse:
// its ring (the window plus two blocks) stays allocated while it waits,
// which is worth it for small frames (most certificates) and not for
// large ones, whose decoding costs far more than a new decoder.
const pooledWindow = 1 << 20

// Decompressor reads the content of one zstd frame as a stream, decoding
// a block only when the reader gets to it, so that a reader that stops
// early (a verifier at the first bad step) never pays for the rest.
//
// It makes Decompress's header checks before anything is decoded, and
// delivers exactly the declared content size: a frame that decodes to
// more or to less, a broken block or a failing checksum is ErrCorrupt
// (sticky), and the reader sees io.EOF only once the whole frame decoded
// to its declared size with its checksum verified. The window it keeps
// is at most MaxWindow (see NewDecompressor).
type Decompressor struct {
	dec    *zstd.Decoder
	size   uint64 // declared content size; unknownSize: none declared
	limit  uint64 // what a frame without a declared size may deliver
	read   uint64 // content delivered so far
	window uint64 // the window the decoder keeps
	prefix uint64 // not 0: the content delivered at most (NewDecompressorPrefix)
	err    error  // sticky: the first failure, or io.EOF
	// in is the input of a frame read from an io.Reader
	// (NewDecompressorFrom), whose own failures come first.
	in *frameGuard
}

// streamDecoders holds decoders of small windows for reuse.
var streamDecoders sync.Pool

// decompressed counts the content every Decompressor delivered.
var decompressed atomic.Int64

// DecompressedTotal is how many bytes of content the Decompressors of
// this process have delivered since it started (their decoders are at
// most one block ahead each): what streamed verification really
// decompressed, for tests and telemetry.
func DecompressedTotal() int64 { return decompressed.Load() }

func newStreamDecoder() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		// One goroutine, decoding as it is read.
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(MaxWindow),
		// NewDecompressor checks the declared size; the decoder checks
		// the content against it block by block.
		zstd.WithDecoderMaxMemory(MaxDecompressedSize),
		// Never decode a whole buffer at once behind the reader's back.
		zstd.WithDecodeBuffersBelow(0),
	)
}

// NewDecompressor checks the header of the zstd frame src as Decompress
// does (a declared content size of at most maxSize, no dictionary, not
// skippable, possible for the input's length, nothing after the frame)
// and returns a reader of its content; nothing is decoded yet.
//
// The frame is decoded with a window of at most MaxWindow. A frame that
// declares a larger one (a single-segment frame's window is its whole
// content) is read as if it declared MaxWindow: that decodes exactly
// every frame whose matches reach back at most 8 MiB, which is every
// frame Compress wrote (its encoder's window is 8 MiB, also in the
// single-segment frames it wrote before it declared its window) and
// every frame of zstd's levels up to 19, and fails any other with
// ErrCorrupt (a match beyond the window). A frame whose content is
// smaller than its window is read with a window of its content size.
//
// Close releases the decoder.
func NewDecompressor(src []byte, maxSize int64) (*Decompressor, error) {
	h, size, err := parseHeader("decompress stream", src, maxSize, false)
	if err != nil {
		return nil, err
	}
	return newDecompressor(src, bytes.NewReader(src[h.HeaderSize:]), h, size, 0, -1, 0)
}

// NewStreamDecompressor is NewDecompressor for a frame that may not
// declare its content size, as a Compressor writes them (v2
// certificates, which a prover streams as it runs). A frame that
// declares its size is read as NewDecompressor reads it. One that does
// not is read to its end, the same header checks made first, within the
// same window; its Size is -1, and the content that takes it past limit
// is ErrTooLarge (sticky) with nothing of it delivered: the caller's
// limit, derived from the job, bounds what such a frame can cost, as a
// declared size bounds the others.
//
// Bytes after the frame are ErrCorrupt once its end is reached, as
// NewStreamDecompressorFrom finds them in a frame read from a file (a
// frameGuard, here over memory): both report the first fault in the
// input's order, so content past limit before the end is ErrTooLarge in
// either, whatever follows it (FuzzDecompressorFrom found them
// disagreeing when this one looked for trailing bytes first).
func NewStreamDecompressor(src []byte, limit int64) (*Decompressor, error) {
	h, size, err := checkHeader("decompress stream", src, int64(len(src)), limit, true)
	if err != nil {
		return nil, err
	}
	contentMax := int64(-1)
	if bound, ok := contentBound(&h, src); ok {
		contentMax = int64(bound)
	}
	in := &frameGuard{r: bytes.NewReader(src[h.HeaderSize:]), checksum: h.HasCheckSum}
	d, err := newDecompressor(src, in, h, size, uint64(limit), contentMax, 0)
	if err != nil {
		return nil, err
	}
	d.in = in
	return d, nil
}

// newDecompressor reads the frame whose header h (declaring size, or
// unknownSize to be read within limit) starts head, and whose body (all
// that follows the header) body delivers. contentMax, when not -1, is
// what the frame's blocks can decode to (contentBound: known only when
// the whole frame is at hand, not when it is streamed from a reader).
// prefix, when not 0, is how much of the content the reader delivers at
// most (NewDecompressorPrefix).
func newDecompressor(head []byte, body io.Reader, h zstd.Header, size, limit uint64, contentMax int64, prefix uint64) (*Decompressor, error) {
	declared := h.WindowSize
	if h.SingleSegment {
		declared = size
	}
	window := min(declared, MaxWindow)
	// The frame's own window descriptor, when it has one within bounds.
	wd := byte(23-10) << 3 // MaxWindow: exponent log2 − 10, no eighths
	if !h.SingleSegment && declared <= MaxWindow {
		wd = head[5]
	}
	if size == unknownSize && contentMax >= 0 && uint64(contentMax) < window {
		// The blocks bound the content: a frame smaller than its window
		// (most certificates) is decoded with a window of that bound, not
		// MaxWindow's ring.
		window, wd = windowFor(uint64(contentMax))
	}
	if prefix != 0 {
		// Every block that holds a byte of the prefix ends within a
		// block of it, and its matches cannot reach before the
		// content's start: a window of the prefix and one block decodes
		// those blocks exactly as the frame's own would.
		if w, pwd := windowFor(prefix + maxBlockOut); w < window {
			window, wd = w, pwd
		}
	}
	header := normalizedHeader(head[4], size, window, wd)
	if size <= window {
		window = size
	}
	var (
		dec *zstd.Decoder
		err error
	)
	if d, ok := streamDecoders.Get().(*zstd.Decoder); ok {
		dec = d
	} else if dec, err = newStreamDecoder(); err != nil {
		return nil, fmt.Errorf("artifacts: decompress stream: %w", err)
	}
	in := io.MultiReader(bytes.NewReader(header), body)
	if err := dec.Reset(in); err != nil {
		dec.Close()
		return nil, fmt.Errorf("artifacts: decompress stream: %w", err)
	}
	return &Decompressor{dec: dec, size: size, limit: limit, window: window, prefix: prefix}, nil
}

// contentBound is the most content the frame at the start of src can
// decode to, from its block headers (nothing is decoded): a raw or RLE
// block's content is its declared size, a compressed block's at most
// the block maximum (its window, at most 128 KiB). ok is false when the
// walk runs off src or meets a reserved block type (the decoder reports
// the broken frame).
func contentBound(h *zstd.Header, src []byte) (bound uint64, ok bool) {
	blockMax := min(h.WindowSize, maxBlockOut)
	off := h.HeaderSize
	for last := false; !last; {
		if off+3 > len(src) {
			return 0, false
		}
		bh := int(src[off]) | int(src[off+1])<<8 | int(src[off+2])<<16
		last, off = bh&1 == 1, off+3
		size := bh >> 3
		switch (bh >> 1) & 3 {
		case 0: // raw
			bound += uint64(size)
			off += size
		case 1: // RLE: one byte, repeated size times
			bound += uint64(size)
			off++
		case 2: // compressed
			bound += blockMax
			off += size
		default: // reserved
			return 0, false
		}
	}
	return bound, off <= len(src)
}

// windowFor is the smallest window a frame header can declare (a power
// of two, at least zstd's 1 KiB) that holds n bytes, and its window
// descriptor.
func windowFor(n uint64) (window uint64, wd byte) {
	log := uint(10)
	for uint64(1)<<log < n {
		log++
	}
	return 1 << log, byte(log-10) << 3
}

// normalizedHeader rewrites a frame header (its descriptor byte fhd, its
// content size) to say what the decoder is to keep: a single-segment
// frame when the content fits the window (the window is then the content
// size), else the window descriptor wd. The checksum flag is kept; the
// content size is always written in eight bytes, which means the same
// for every size, or not at all when the frame declares none
// (unknownSize). A header only tells the decoder how much history to
// keep and how much content to expect, so this changes no decoded byte
// of a frame whose matches stay within the window.
func normalizedHeader(fhd byte, size, window uint64, wd byte) []byte {
	const (
		fcs8          = 3 << 6
		singleSegment = 1 << 5
		checksum      = 1 << 2
	)
	if size == unknownSize {
		return []byte{0x28, 0xb5, 0x2f, 0xfd, fhd & checksum, wd}
	}
	h := []byte{0x28, 0xb5, 0x2f, 0xfd, fcs8 | fhd&checksum}
	if size <= window {
		h[4] |= singleSegment
	} else {
		h = append(h, wd)
	}
	return binary.LittleEndian.AppendUint64(h, size)
}

// Size is the frame's declared content size: what the reader delivers;
// -1 for a frame that declares none (NewStreamDecompressor).
func (d *Decompressor) Size() int64 {
	if d.size == unknownSize {
		return -1
	}
	return int64(d.size)
}

// Delivered is how many bytes of content the reader has delivered. The
// decoder is at most one block (128 KiB) ahead of it.
func (d *Decompressor) Delivered() int64 { return int64(d.read) }

// Window is the history the decoder keeps (at most MaxWindow, at most the
// content size): with its ring of two more blocks, what reading the
// frame costs in memory.
func (d *Decompressor) Window() int64 { return int64(d.window) }

// Read delivers the frame's content: never more than the declared size,
// then io.EOF once the decoder has checked that the frame ends there
// (with its checksum; NewDecompressor refused anything after the frame).
func (d *Decompressor) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.dec == nil {
		return 0, fmt.Errorf("artifacts: decompress stream: %w", ErrClosed)
	}
	if d.prefix != 0 && d.read < d.size {
		if d.read >= d.prefix {
			d.err = io.EOF
			return 0, d.err
		}
		p = p[:min(uint64(len(p)), d.prefix-d.read)]
	}
	if d.size == unknownSize {
		return d.readUnsized(p)
	}
	if d.read == d.size {
		return 0, d.end()
	}
	p = p[:min(uint64(len(p)), d.size-d.read)]
	n, err := d.dec.Read(p)
	d.read += uint64(n)
	decompressed.Add(int64(n))
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		if d.read < d.size {
			d.err = fmt.Errorf("artifacts: decompress stream: content ends after %d bytes, frame declared %d: %w", d.read, d.size, ErrCorrupt)
			return n, d.err
		}
	default:
		d.err = d.failed(err)
		return n, d.err
	}
	return n, nil
}

// readUnsized reads a frame that declares no size: to the frame's end
// (the decoder's io.EOF, after its checksum; nothing may follow, which
// the header checks saw), or to the limit, one byte past which is
// ErrTooLarge and is not delivered.
func (d *Decompressor) readUnsized(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	p = p[:min(uint64(len(p)), d.limit-d.read+1)]
	n, err := d.dec.Read(p)
	if d.read+uint64(n) > d.limit {
		n = int(d.limit - d.read)
		d.read += uint64(n)
		decompressed.Add(int64(n))
		d.err = fmt.Errorf("artifacts: decompress stream: content exceeds the limit of %d bytes: %w", d.limit, ErrTooLarge)
		return n, d.err
	}
	d.read += uint64(n)
	decompressed.Add(int64(n))
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, io.EOF):
		d.err = io.EOF
		return n, d.err
	default:
		d.err = d.failed(err)
		return n, d.err
	}
}

// end checks, once the declared content is delivered, that the frame
// ends there: the decoder must report the end of its input. Content past
// the declared size (the frame's own, or another frame's) is ErrCorrupt.
func (d *Decompressor) end() error {
	var one [1]byte
	// A decoder that returns neither data nor an error keeps being asked,
	// a bounded number of times.
	for range 64 {
		n, err := d.dec.Read(one[:])
		switch {
		case n > 0:
			d.err = fmt.Errorf("artifacts: decompress stream: content exceeds declared size %d: %w", d.size, ErrCorrupt)
			return d.err
		case errors.Is(err, io.EOF):
			d.err = io.EOF
			return d.err
		case err != nil:
			d.err = d.failed(err)
			return d.err
		}
	}
	d.err = fmt.Errorf("artifacts: decompress stream: the decoder does not end: %w", ErrCorrupt)
	return d.err
}

// failed is the error that ends the stream when the decoder fails with
// err: the input's own failure if it had one (an I/O error, a limit, a
// byte after the frame), else err as ErrCorrupt.
func (d *Decompressor) failed(err error) error {
	if in := d.in.failure(); in != nil {
		return fmt.Errorf("artifacts: decompress stream: %w", in)
	}
	return corruptStream(err)
}

func corruptStream(err error) error {
	if errors.Is(err, zstd.ErrFrameSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return fmt.Errorf("artifacts: decompress stream: content exceeds declared size: %w: %w", ErrCorrupt, err)
	}
	return fmt.Errorf("artifacts: decompress stream: %w: %w", ErrCorrupt, err)
}

// Close releases the decoder: a decoder of a small window goes back to
// the pool, any other is closed (its ring is freed with it). Reads after
// Close fail with ErrClosed.
func (d *Decompressor) Close() error {
	if d.dec == nil {
		return nil
	}
	dec := d.dec
	d.dec = nil
	if d.window <= pooledWindow {
		// Drop the reference to the input; the decoder keeps its buffers.
		if err := dec.Reset(nil); err == nil {
			streamDecoders.Put(dec)
			return nil
		}
	}
	dec.Close()
	return nil
}
