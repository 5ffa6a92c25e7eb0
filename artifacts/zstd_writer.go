package artifacts

import (
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// StreamWindow is the window of a Compressor: the history its matches
// reach back into, and what it keeps of it. 8 MiB (MaxWindow, what every
// Decompressor decodes); see CompressorBytes for what it costs.
const StreamWindow = MaxWindow

// Compressor writes one zstd frame to an io.Writer as its content comes,
// without knowing the content's length: the frame declares its window
// (StreamWindow) and carries a checksum, but not its content size,
// except for content that Close finds whole in the first block. It is
// what a prover streams a certificate through into its artifact file
// (docs/artifacts.md, "Streaming: Compressor"). A NewStreamDecompressor
// reads such frames, bounded by its caller's limit.
//
// It encodes on the calling goroutine (no encoder goroutines, so nothing
// of it runs after Close), and what it holds is fixed by its window,
// not by the content: TestCompressorMemory measures it.
type Compressor struct {
	enc *zstd.Encoder
	err error
}

// NewCompressor returns a Compressor of one frame into w. Close ends the
// frame (and must be called for the frame to be complete); it does not
// close w.
func NewCompressor(w io.Writer) (*Compressor, error) {
	enc, err := zstd.NewWriter(w,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderCRC(true),
		zstd.WithWindowSize(StreamWindow),
		// One goroutine: the block is encoded and written in the Write
		// that fills it, so a failing w stops the prover at once.
		zstd.WithEncoderConcurrency(1),
		// Never a single-segment frame: a decoder must be able to keep
		// only the window, not the whole content.
		zstd.WithSingleSegment(false),
		zstd.WithZeroFrames(true),
		// Not the lower-memory mode: its history holds the window and
		// one block, so each 128 KiB block moves the whole 8 MiB window
		// down, 64 bytes copied per byte compressed (9.6 % of a long
		// prove's CPU); this one holds two windows and moves one per
		// window's worth, for 8 MiB more (CompressorBytes).
	)
	if err != nil {
		return nil, fmt.Errorf("artifacts: compressor: %w", err)
	}
	return &Compressor{enc: enc}, nil
}

// Write compresses p into the frame; errors of the underlying writer
// (ErrTooLarge of an artifacts.Writer among them) come back here, at the
// latest from Close, and stick.
func (c *Compressor) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.enc.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// Close writes the rest of the frame (its last block and checksum) and
// releases the encoder.
func (c *Compressor) Close() error {
	if c.enc == nil {
		return c.err
	}
	err := c.enc.Close()
	c.enc = nil
	if c.err == nil {
		c.err = err
	}
	return c.err
}

// Abort releases the encoder without ending the frame: for a writer that
// is discarded anyway.
func (c *Compressor) Abort() {
	if c.enc == nil {
		return
	}
	c.enc.Reset(io.Discard)
	c.enc.Close()
	c.enc = nil
	if c.err == nil {
		c.err = fmt.Errorf("artifacts: compressor: %w", ErrClosed)
	}
}

// CompressorBytes bounds what a Compressor allocates, whatever its
// content's length: what a prove job counts for it against its memory.
// TestCompressorMemory measured 18.7 MiB (19,587,800 bytes) for 8 MiB
// and for 64 MiB of content (klauspost/compress v1.20.4, SpeedDefault,
// an 8 MiB window, a 16 MiB history).
const CompressorBytes = 24 << 20
