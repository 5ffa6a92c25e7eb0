package artifacts

import (
	"bytes"
	"fmt"
)

// NewDecompressorPrefix is NewDecompressor (the same header checks) of
// only the first n bytes of the frame's content: the reader delivers at
// most n bytes, then io.EOF, however long the content; a frame whose
// content is shorter ends as NewDecompressor's does.
//
// What it saves is the window: it keeps the smallest power of two that
// holds n bytes and one block (at most the frame's own window), not the
// frame's window (up to MaxWindow, allocated when the first block is
// decoded). Every byte of the prefix is the same as NewDecompressor's: a
// block that holds one ends within 128 KiB past n, and its matches
// cannot reach before the content's start. It is for reading a
// certificate's statement (its first bytes) without the 8 MiB ring a
// long certificate's decoder keeps.
func NewDecompressorPrefix(src []byte, maxSize, n int64) (*Decompressor, error) {
	return newDecompressorPrefix(src, maxSize, n, false)
}

// NewStreamDecompressorPrefix is NewDecompressorPrefix for a frame that
// may not declare its content size, checked as NewStreamDecompressor
// checks it (limit bounds its content).
func NewStreamDecompressorPrefix(src []byte, limit, n int64) (*Decompressor, error) {
	return newDecompressorPrefix(src, limit, n, true)
}

func newDecompressorPrefix(src []byte, limit, n int64, unsized bool) (*Decompressor, error) {
	const op = "decompress prefix"
	if n <= 0 {
		return nil, fmt.Errorf("artifacts: %s: prefix of %d bytes", op, n)
	}
	h, size, err := parseHeader(op, src, limit, unsized)
	if err != nil {
		return nil, err
	}
	contentMax := int64(-1)
	if bound, ok := contentBound(&h, src); ok && size == unknownSize {
		contentMax = int64(bound)
	}
	var lim uint64
	if size == unknownSize {
		lim = uint64(limit)
	}
	return newDecompressor(src, bytes.NewReader(src[h.HeaderSize:]), h, size, lim, contentMax, uint64(n))
}
