package artifacts

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// streamed compresses src through a Compressor in writes of chunk bytes.
func streamed(t *testing.T, src []byte, chunk int) []byte {
	t.Helper()
	var buf bytes.Buffer
	c, err := NewCompressor(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for len(src) > 0 {
		n := min(chunk, len(src))
		if _, err := c.Write(src[:n]); err != nil {
			t.Fatal(err)
		}
		src = src[n:]
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readUnsized reads a frame through NewStreamDecompressor in reads of
// chunk bytes.
func readUnsized(src []byte, limit int64, chunk int) ([]byte, *Decompressor, error) {
	d, err := NewStreamDecompressor(src, limit)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	var out []byte
	buf := make([]byte, chunk)
	for {
		n, err := d.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out, d, nil
		}
		if err != nil {
			return out, d, err
		}
	}
}

// TestCompressorFrames: a Compressor writes one frame that declares no
// content size and a window of StreamWindow, with a checksum; a stream
// decompressor gives its content back in reads of any size (Size -1);
// NewDecompressor and Decompress, which v1 certificates go through, still
// refuse it. Fails before the Compressor and NewStreamDecompressor
// existed (they did not compile).
func TestCompressorFrames(t *testing.T) {
	for _, n := range []int{0, 1, 5000, 1 << 20, MaxWindow + 3<<20} {
		src := sample(n)
		frame := streamed(t, src, 4096+n%7)
		var h zstd.Header
		if err := h.Decode(frame); err != nil {
			t.Fatal(err)
		}
		// Content that Close finds whole in the encoder's first block
		// gets its size declared; anything longer cannot.
		if (h.HasFCS && n >= 1<<20) || h.SingleSegment || !h.HasCheckSum || h.WindowSize > StreamWindow {
			t.Fatalf("%d bytes: header %+v", n, h)
		}
		for _, chunk := range []int{1 << 20, 333} {
			if n > 1<<20 && chunk < 1000 {
				continue
			}
			got, d, err := readUnsized(frame, int64(n), chunk)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%d bytes in reads of %d: %d bytes back, %v", n, chunk, len(got), err)
			}
			if (d.Size() != -1 && !h.HasFCS) || d.Delivered() != int64(n) || d.Window() > MaxWindow {
				t.Fatalf("%d bytes: size %d, delivered %d, window %d", n, d.Size(), d.Delivered(), d.Window())
			}
		}
		if h.HasFCS {
			continue
		}
		if _, err := NewDecompressor(frame, 1<<30); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d bytes: NewDecompressor of a frame without a size: %v", n, err)
		}
		if _, err := Decompress(frame, 1<<30); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%d bytes: Decompress of a frame without a size: %v", n, err)
		}
	}
	// A frame that declares its size reads through NewStreamDecompressor
	// exactly as through NewDecompressor, its declared size checked
	// against the limit before anything is decoded.
	src := sample(70000)
	sized := Compress(nil, src)
	got, d, err := readUnsized(sized, int64(len(src)), 1000)
	if err != nil || !bytes.Equal(got, src) || d.Size() != int64(len(src)) {
		t.Fatalf("a sized frame: %v", err)
	}
	if _, err := NewStreamDecompressor(sized, int64(len(src))-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a sized frame over the limit: %v", err)
	}
}

// TestStreamDecompressorLimit: content without a declared size is
// bounded by the caller's limit as it is read: exactly the limit is
// read to the end; one byte more is ErrTooLarge (sticky) with no byte
// past the limit delivered, and the decoder has done at most a block
// more than that, whatever the frame would go on to (a bomb).
func TestStreamDecompressorLimit(t *testing.T) {
	src := sample(300000)
	frame := streamed(t, src, 1<<16)
	if got, _, err := readUnsized(frame, int64(len(src)), 4096); err != nil || len(got) != len(src) {
		t.Fatalf("at the limit: %d bytes, %v", len(got), err)
	}
	for _, chunk := range []int{1, 4096, 1 << 20} {
		got, d, err := readUnsized(frame, int64(len(src))-1, chunk)
		if !errors.Is(err, ErrTooLarge) || len(got) != len(src)-1 || !bytes.Equal(got, src[:len(got)]) {
			t.Fatalf("reads of %d: %d bytes, %v", chunk, len(got), err)
		}
		if n, err := d.Read(make([]byte, 10)); n != 0 || !errors.Is(err, ErrTooLarge) {
			t.Fatalf("after the limit: %d, %v", n, err)
		}
	}
	bomb := streamed(t, make([]byte, 200<<20), 1<<20)
	before := DecompressedTotal()
	if got, _, err := readUnsized(bomb, 1<<20, 1<<16); !errors.Is(err, ErrTooLarge) || len(got) != 1<<20 {
		t.Fatalf("a 200 MiB bomb under 1 MiB: %d bytes, %v", len(got), err)
	}
	if n := DecompressedTotal() - before; n != 1<<20 {
		t.Fatalf("the bomb delivered %d bytes", n)
	}
}

// TestStreamDecompressorRefusals: a frame without a declared size that
// is cut short, has a broken checksum, or anything after it (another
// frame, empty or skippable, or a byte) is ErrCorrupt, never a clean
// end; the header checks come before anything is decoded.
func TestStreamDecompressorRefusals(t *testing.T) {
	src := sample(200000)
	good := streamed(t, src, 1<<14)
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 0xff
	empty := streamed(t, nil, 1)
	skippable := []byte{0x50, 0x2a, 0x4d, 0x18, 1, 0, 0, 0, 'x'}
	for name, frame := range map[string][]byte{
		"cut in a block":         good[:len(good)/2],
		"cut before the crc":     good[:len(good)-4],
		"cut after the header":   good[:6],
		"bad checksum":           badCRC,
		"an empty frame after":   append(bytes.Clone(good), empty...),
		"a skippable frame":      append(bytes.Clone(good), skippable...),
		"a frame after":          append(bytes.Clone(good), good...),
		"one byte after":         append(bytes.Clone(good), 0),
		"a skippable frame only": skippable,
	} {
		got, _, err := readUnsized(frame, 1<<30, 1<<16)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	if _, err := NewStreamDecompressor(good, -1); err == nil {
		t.Error("a negative limit was taken")
	}
}

// TestStreamDecompressorWindow: a frame without a declared size that
// declares a window above MaxWindow is read with MaxWindow, as a sized
// one is: its matches within 8 MiB decode, one further back is
// ErrCorrupt.
func TestStreamDecompressorWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compresses 18 MiB of noise")
	}
	noise := randomBytes(9 << 20)
	var buf bytes.Buffer
	e, err := zstd.NewWriter(&buf, zstd.WithWindowSize(32<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	e.Write(noise)
	e.Write(noise)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS || h.WindowSize != 32<<20 {
		t.Fatalf("header %+v, %v", h, err)
	}
	if buf.Len() > 10<<20 {
		t.Fatalf("the far match was not used: %d bytes", buf.Len())
	}
	_, d, err := readUnsized(buf.Bytes(), 18<<20, 1<<20)
	if !errors.Is(err, ErrCorrupt) || d.Window() != MaxWindow {
		t.Fatalf("the far match: %v", err)
	}
	// A frame of 2 MiB is read with a window of its blocks' bound (2 MiB
	// of compressed blocks of at most 128 KiB each), not StreamWindow
	// (TestStreamDecompressorSmallWindow).
	near := streamed(t, append(sample(1<<20), sample(1<<20)...), 1<<20)
	if got, d, err := readUnsized(near, 2<<20, 1<<20); err != nil || len(got) != 2<<20 || d.Window() < 2<<20 || d.Window() >= StreamWindow {
		t.Fatalf("near matches: %v (window %d)", err, d.Window())
	}
}

// TestStreamDecompressorSmallWindow: a frame without a declared size is
// read with a window no larger than its blocks can decode to (a raw
// block's size, at most 128 KiB a compressed block), rounded up to a
// power of two, so that a small certificate does not cost an 8 MiB ring:
// its content comes back whole, and opening and reading it allocates
// well under MaxWindow. A frame larger than MaxWindow keeps MaxWindow.
// Fails before the bound (every such frame had StreamWindow).
func TestStreamDecompressorSmallWindow(t *testing.T) {
	for _, c := range []struct {
		content []byte
		most    int64
	}{
		{nil, 1 << 10},
		{sample(100), 128 << 10},
		{sample(200 << 10), 256 << 10},
		{randomBytes(300 << 10), 512 << 10},
		{sample(9 << 20), MaxWindow},
	} {
		frame := streamed(t, c.content, 64<<10)
		got, d, err := readUnsized(frame, 16<<20, 32<<10)
		if err != nil || !bytes.Equal(got, c.content) {
			t.Fatalf("%d bytes: %v", len(c.content), err)
		}
		if d.Window() > c.most || (len(c.content) > 0 && d.Window() < int64(min(len(c.content), MaxWindow))) {
			t.Fatalf("%d bytes: window %d, want at least the content and at most %d", len(c.content), d.Window(), c.most)
		}
	}
	small := streamed(t, sample(100<<10), 64<<10)
	alloc := allocated(func() {
		if _, _, err := readUnsized(small, 1<<20, 32<<10); err != nil {
			t.Fatal(err)
		}
	})
	if alloc > 2<<20 {
		t.Fatalf("reading a 100 KiB frame allocated %d bytes", alloc)
	}
}

// TestCompressorMemory: what a Compressor allocates does not grow with
// its content: compressing 64 MiB allocates what 8 MiB does, within a
// few blocks, and both stay near its window (the figure is logged; the
// worker counts it against a prove job's memory).
func TestCompressorMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compresses 72 MiB")
	}
	chunk := sample(1 << 20)
	run := func(n int) func() {
		return func() {
			c, err := NewCompressor(io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				if _, err := c.Write(chunk); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	small, large := allocated(run(8)), allocated(run(64))
	t.Logf("compressor allocations: %d bytes for 8 MiB, %d bytes for 64 MiB", small, large)
	if large > small+1<<20 || large > CompressorBytes {
		t.Fatalf("compressor allocations grow with content: %d bytes for 8 MiB, %d for 64 MiB (bound %d)", small, large, CompressorBytes)
	}
}

// FuzzStreamDecompressor: a frame read through NewStreamDecompressor
// never delivers more than its limit, fails only with ErrCorrupt or
// ErrTooLarge, gives what Decompress gives for a frame that declares its
// size, and for one that does not, what a plain zstd decoder gives (or
// fails where it fails; it may refuse more: trailing frames, the limit).
func FuzzStreamDecompressor(f *testing.F) {
	var seed bytes.Buffer
	for _, src := range [][]byte{nil, []byte("abc"), sample(3000), sample(200000)} {
		seed.Reset()
		c, _ := NewCompressor(&seed)
		c.Write(src)
		c.Write(src)
		c.Close()
		f.Add(bytes.Clone(seed.Bytes()), int64(2*len(src)))
	}
	f.Add(Compress(nil, sample(3000)), int64(4096))
	f.Add(append(bytes.Clone(seed.Bytes()), Compress(nil, nil)...), int64(1<<20))
	plain, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(MaxWindow), zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte, limit int64) {
		limit %= 1 << 20
		if limit < 0 {
			limit = -limit
		}
		got, d, err := readUnsized(in, limit, 1000)
		if int64(len(got)) > limit {
			t.Fatalf("%d bytes delivered over a limit of %d", len(got), limit)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error %v is neither ErrCorrupt nor ErrTooLarge", err)
		}
		var h zstd.Header
		if h.Decode(in) == nil && h.HasFCS {
			want, werr := Decompress(in, limit)
			if (werr == nil) != (err == nil) || err == nil && !bytes.Equal(got, want) {
				t.Fatalf("a sized frame: Decompress %v, streamed %v", werr, err)
			}
			return
		}
		if err != nil {
			return
		}
		if d.Size() != -1 {
			t.Fatalf("an unsized frame reports size %d", d.Size())
		}
		// A frame that declares a window over MaxWindow is read as if it
		// declared MaxWindow (NewDecompressor): so is the reference's copy.
		ref := in
		if !h.SingleSegment && h.WindowSize > MaxWindow {
			ref = bytes.Clone(in)
			ref[5] = byte(23-10) << 3
		}
		want, perr := plain.DecodeAll(ref, nil)
		if perr != nil || !bytes.Equal(got, want) {
			t.Fatalf("accepted %d bytes; a plain decoder: %d bytes, %v", len(got), len(want), perr)
		}
	})
}
