package artifacts

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// MaxDecompressedSize caps what Decompress ever produces, whatever maxSize a
// caller passes; it is far above any artifact the contract allows.
const MaxDecompressedSize = 1 << 30

// A zstd block never decodes to more than 128 KiB and needs at least a
// 3-byte header plus one byte, so no frame of n bytes can honestly declare
// more than about n/4 * 128 KiB.
const maxBlockOut = 128 << 10

// blockOverAlloc is the spare room the decoder wants past a block to use
// its fast copy loops.
const blockOverAlloc = 32

// The encoder and decoder are shared: EncodeAll and DecodeAll are safe for
// concurrent use and keep their own pools of per-call state.
var (
	// Content of at most MaxWindow goes into single-segment frames,
	// which always carry Frame_Content_Size, even below 256 bytes (which
	// Decompress requires), and whose window is their content.
	encoder = sync.OnceValue(func() *zstd.Encoder { return newEncoder(true) })
	// Larger content goes into frames that declare the encoder's window
	// (MaxWindow) and their content size (always written above 256
	// bytes), so that a decoder needs only the window, not the content.
	windowedEncoder = sync.OnceValue(func() *zstd.Encoder { return newEncoder(false) })
	decoder         = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderMaxMemory(MaxDecompressedSize),
			zstd.WithDecoderMaxWindow(MaxDecompressedSize),
			// DecodeAll then never writes past cap(dst), which
			// Decompress sets to the declared and checked size: a frame
			// that lies about its size fails instead of growing dst.
			zstd.WithDecodeAllCapLimit(true),
		)
		if err != nil {
			panic(fmt.Sprintf("artifacts: zstd decoder options: %v", err))
		}
		return d
	})
)

func newEncoder(singleSegment bool) *zstd.Encoder {
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderCRC(true),
		zstd.WithWindowSize(MaxWindow),
		zstd.WithSingleSegment(singleSegment),
		// An empty artifact still gets a frame with a declared size.
		zstd.WithZeroFrames(true),
	)
	if err != nil {
		// Only reachable through invalid constant options above.
		panic(fmt.Sprintf("artifacts: zstd encoder options: %v", err))
	}
	return e
}

// Compress appends one zstd frame holding src to dst and returns the result.
// The frame always declares its content size and carries a checksum; its
// window is at most MaxWindow.
func Compress(dst, src []byte) []byte {
	if len(src) > MaxWindow {
		return windowedEncoder().EncodeAll(src, dst)
	}
	return encoder().EncodeAll(src, dst)
}

// Decompress decodes a zstd frame of at most maxSize bytes of content.
//
// The frame must declare its content size (frames written by Compress do):
// the size is checked against maxSize and against what the input can
// possibly encode before anything is allocated, and the output buffer is
// allocated once at exactly that size. Frames without a declared size, as
// written by streaming encoders, are refused with ErrCorrupt: a size known
// up front is what lets a too-large artifact fail before any work. Output
// that exceeds the declared size stops at the first block past it
// (ErrCorrupt), so the output buffer never exceeds the declared size plus
// one 128 KiB block. Skippable frames, dictionaries and anything after the
// one frame (another frame, empty or skippable, or other bytes) are
// refused as well.
func Decompress(src []byte, maxSize int64) ([]byte, error) {
	_, size, err := parseHeader("decompress", src, maxSize, false)
	if err != nil {
		return nil, err
	}
	// One block of slack past the declared size lets a frame that lies
	// about it be caught by the decoder's size check after that block,
	// instead of growing the buffer, and keeps the decoder on its fast
	// path for the last block.
	out, err := decoder().DecodeAll(src, make([]byte, 0, size+maxBlockOut+blockOverAlloc))
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrFrameSizeExceeded) {
			return nil, fmt.Errorf("artifacts: decompress: content exceeds declared size %d: %w: %w", size, ErrCorrupt, err)
		}
		return nil, fmt.Errorf("artifacts: decompress: %w: %w", ErrCorrupt, err)
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("artifacts: decompress: decoded %d bytes, frame declared %d: %w", len(out), size, ErrCorrupt)
	}
	if len(out) < maxBlockOut {
		// Do not pin the slack for the caller's lifetime of a small result.
		return append([]byte(nil), out...), nil
	}
	return out, nil
}

// unknownSize is parseHeader's size of a frame that declares none.
const unknownSize = ^uint64(0)

// parseHeader checks a frame's header for Decompress and the
// Decompressors and returns it with the content size it declares. A
// frame without a declared size is refused unless unsized allows it;
// its size is then unknownSize, for the caller to bound as it decodes.
func parseHeader(op string, src []byte, maxSize int64, unsized bool) (zstd.Header, uint64, error) {
	h, size, err := checkHeader(op, src, int64(len(src)), maxSize, unsized)
	if err != nil {
		return h, 0, err
	}
	if end := frameEnd(&h, src); end >= 0 && end < len(src) {
		return h, 0, fmt.Errorf("artifacts: %s: %d bytes after the frame (an artifact is one frame, nothing after it): %w",
			op, len(src)-end, ErrCorrupt)
	}
	return h, size, nil
}

// checkHeader is parseHeader's checks of the header at the start of head
// (at least frameHeaderMax bytes of the frame, or all of it) for a
// frame of n bytes, all but the walk to the frame's end: the caller
// finds that by frameEnd (a frame in memory) or a frameGuard (a frame
// read as a stream).
func checkHeader(op string, head []byte, n, maxSize int64, unsized bool) (zstd.Header, uint64, error) {
	var h zstd.Header
	if maxSize < 0 {
		return h, 0, fmt.Errorf("artifacts: %s: negative limit %d", op, maxSize)
	}
	if err := h.Decode(head); err != nil {
		return h, 0, fmt.Errorf("artifacts: %s: frame header: %w: %w", op, ErrCorrupt, err)
	}
	switch {
	case h.Skippable:
		return h, 0, fmt.Errorf("artifacts: %s: skippable frame: %w", op, ErrCorrupt)
	case !h.HasFCS && !unsized:
		return h, 0, fmt.Errorf("artifacts: %s: frame does not declare its content size: %w", op, ErrCorrupt)
	case h.DictionaryID != 0:
		return h, 0, fmt.Errorf("artifacts: %s: frame needs dictionary %d: %w", op, h.DictionaryID, ErrCorrupt)
	}
	if !h.HasFCS {
		return h, unknownSize, nil
	}
	size := h.FrameContentSize
	if size > uint64(maxSize) || size > MaxDecompressedSize {
		return h, 0, fmt.Errorf("artifacts: %s: declared content size %d exceeds limit %d: %w",
			op, size, min(maxSize, MaxDecompressedSize), ErrTooLarge)
	}
	if possible := (uint64(n) + 3) / 4 * maxBlockOut; size > possible {
		return h, 0, fmt.Errorf("artifacts: %s: declared content size %d but %d bytes of input: %w",
			op, size, n, ErrCorrupt)
	}
	return h, size, nil
}

// frameEnd is the length of the frame at the start of src, found by
// walking its block headers (the blocks are not decoded), or -1 when the
// walk runs off the end of src or meets a reserved block type: then the
// frame is broken, which the decoder reports.
//
// An artifact is exactly one frame: zstd would also take empty frames
// and skippable frames after it, which add nothing to the content but
// change the bytes, and so the artifact's SHA-256, under the same
// certificate (docs/artifacts.md, "Which bytes are an artifact").
func frameEnd(h *zstd.Header, src []byte) int {
	off := h.HeaderSize
	for last := false; !last; {
		if off+3 > len(src) {
			return -1
		}
		bh := int(src[off]) | int(src[off+1])<<8 | int(src[off+2])<<16
		last, off = bh&1 == 1, off+3
		switch (bh >> 1) & 3 {
		case 1: // RLE: one byte, repeated
			off++
		case 3: // reserved
			return -1
		default: // raw or compressed: the block's size
			off += bh >> 3
		}
	}
	if h.HasCheckSum {
		off += 4
	}
	if off > len(src) {
		return -1
	}
	return off
}
