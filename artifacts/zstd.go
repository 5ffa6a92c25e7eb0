package artifacts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
	encoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderCRC(true),
			// Single-segment frames always carry Frame_Content_Size, even
			// below 256 bytes, which Decompress requires.
			zstd.WithSingleSegment(true),
			// An empty artifact still gets a frame with a declared size.
			zstd.WithZeroFrames(true),
		)
		if err != nil {
			// Only reachable through invalid constant options above.
			panic(fmt.Sprintf("artifacts: zstd encoder options: %v", err))
		}
		return e
	})
	decoder = sync.OnceValue(func() *zstd.Decoder {
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

// Compress appends one zstd frame holding src to dst and returns the result.
// The frame always declares its content size and carries a checksum.
func Compress(dst, src []byte) []byte {
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
// one 128 KiB block. Skippable frames, dictionaries and trailing data that
// adds content are refused as well.
func Decompress(src []byte, maxSize int64) ([]byte, error) {
	size, err := declaredSize("decompress", src, maxSize)
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

// declaredSize checks a frame's header for Decompress and DecompressPrefix
// and returns the content size it declares.
func declaredSize(op string, src []byte, maxSize int64) (uint64, error) {
	if maxSize < 0 {
		return 0, fmt.Errorf("artifacts: %s: negative limit %d", op, maxSize)
	}
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return 0, fmt.Errorf("artifacts: %s: frame header: %w: %w", op, ErrCorrupt, err)
	}
	switch {
	case h.Skippable:
		return 0, fmt.Errorf("artifacts: %s: skippable frame: %w", op, ErrCorrupt)
	case !h.HasFCS:
		return 0, fmt.Errorf("artifacts: %s: frame does not declare its content size: %w", op, ErrCorrupt)
	case h.DictionaryID != 0:
		return 0, fmt.Errorf("artifacts: %s: frame needs dictionary %d: %w", op, h.DictionaryID, ErrCorrupt)
	}
	size := h.FrameContentSize
	if size > uint64(maxSize) || size > MaxDecompressedSize {
		return 0, fmt.Errorf("artifacts: %s: declared content size %d exceeds limit %d: %w",
			op, size, min(maxSize, MaxDecompressedSize), ErrTooLarge)
	}
	if possible := (uint64(len(src)) + 3) / 4 * maxBlockOut; size > possible {
		return 0, fmt.Errorf("artifacts: %s: declared content size %d but %d bytes of input: %w",
			op, size, len(src), ErrCorrupt)
	}
	return size, nil
}

// DecompressPrefix decodes the first n bytes of the content of a frame
// that passes Decompress's header checks under maxSize (all of it when
// the content is shorter), decoding only the blocks that takes: what a
// reader of a small header in front of a large artifact needs. The rest
// of the frame is not checked (not even its checksum), so the prefix is
// for reading a claim that is verified later, never for trusting it.
func DecompressPrefix(src []byte, maxSize int64, n int) ([]byte, error) {
	size, err := declaredSize("decompress prefix", src, maxSize)
	if err != nil {
		return nil, err
	}
	// One goroutine, decoding as it is read. (A single-segment frame's
	// window is its content size: the decoder reserves that much, but
	// touches only what it decodes.)
	d, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(MaxDecompressedSize), zstd.WithDecoderMaxWindow(MaxDecompressedSize))
	if err != nil {
		return nil, fmt.Errorf("artifacts: decompress prefix: %w", err)
	}
	defer d.Close()
	out := make([]byte, min(uint64(max(n, 0)), size))
	if _, err := io.ReadFull(d, out); err != nil {
		return nil, fmt.Errorf("artifacts: decompress prefix: %w: %w", ErrCorrupt, err)
	}
	return out, nil
}
