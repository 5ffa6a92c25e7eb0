package artifacts

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/zstd"
)

// readStream reads a frame through a Decompressor in reads of chunk bytes.
func readStream(src []byte, maxSize int64, chunk int) ([]byte, *Decompressor, error) {
	d, err := NewDecompressor(src, maxSize)
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

// legacyCompress is how Compress wrote every frame before it declared its
// window: single-segment (the window is the whole content), with the
// encoder's 8 MiB match window.
func legacyCompress(src []byte) []byte {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true),
		zstd.WithSingleSegment(true), zstd.WithZeroFrames(true))
	if err != nil {
		panic(err)
	}
	return e.EncodeAll(src, nil)
}

// TestDecompressorRoundTrip: streamed, in reads of any size, a frame
// gives what Decompress gives, for frames of Compress (single-segment up
// to MaxWindow, windowed above), for the single-segment frames Compress
// wrote before, and for a stock streaming encoder's frames that declare
// their size; the window kept is at most MaxWindow and at most the
// content.
func TestDecompressorRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: streams frames up to tens of MiB in many read sizes")
	}
	all := sample(slices.Max(streamSizes)) // sample(n) is its prefix
	for _, n := range streamSizes {
		src := all[:n]
		frames := map[string][]byte{"Compress": Compress(nil, src)}
		if n > MaxWindow {
			// Below, the legacy frames are the same bytes as Compress's.
			frames["legacy"] = legacyCompress(src)
		}
		for kind, frame := range frames {
			for _, chunk := range []int{1, 7, 64 << 10, 1 << 20} {
				if n/chunk > 20000 {
					continue // many small reads of a large frame: slow, nothing new
				}
				got, d, err := readStream(frame, int64(n), chunk)
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("%s %d in reads of %d: %d bytes, %v", kind, n, chunk, len(got), err)
				}
				if d.Size() != int64(n) || d.Delivered() != int64(n) || d.Window() > MaxWindow || d.Window() > max(int64(n), 0) {
					t.Fatalf("%s %d: size %d, delivered %d, window %d", kind, n, d.Size(), d.Delivered(), d.Window())
				}
			}
		}
	}
	var h zstd.Header
	if err := h.Decode(Compress(nil, sample(MaxWindow+1))); err != nil || h.SingleSegment || h.WindowSize != MaxWindow || !h.HasFCS {
		t.Fatalf("a frame above MaxWindow: %+v %v", h, err)
	}
	// A stock encoder's frame with a declared size and a small window.
	var buf bytes.Buffer
	w, _ := zstd.NewWriter(&buf, zstd.WithWindowSize(1<<20))
	src := sample(3 << 20)
	w.ResetContentSize(&buf, int64(len(src)))
	w.Write(src)
	w.Close()
	if got, d, err := readStream(buf.Bytes(), int64(len(src)), 4096); err != nil || !bytes.Equal(got, src) || d.Window() != 1<<20 {
		t.Fatalf("a stock streaming frame: %v", err)
	}
}

// TestDecompressorWindowIsBounded: a frame whose matches reach further
// back than MaxWindow cannot be streamed within it and is ErrCorrupt
// (Decompress, which holds everything, still decodes it); the 100 MiB
// bomb, allowed by its limit, gives its first bytes having decoded
// almost nothing and allocated about one window.
func TestDecompressorWindowIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compresses and streams a 100 MiB bomb")
	}
	// 9 MiB of noise twice: the second copy is one match 9 MiB back.
	noise := randomBytes(9 << 20)
	e, err := zstd.NewWriter(nil, zstd.WithWindowSize(32<<20), zstd.WithSingleSegment(true))
	if err != nil {
		t.Fatal(err)
	}
	far := e.EncodeAll(append(bytes.Clone(noise), noise...), nil)
	if len(far) > 10<<20 {
		t.Fatalf("the far match was not used: %d bytes", len(far))
	}
	if _, err := Decompress(far, 18<<20); err != nil {
		t.Fatalf("Decompress of the far match: %v", err)
	}
	if _, _, err := readStream(far, 18<<20, 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("streaming the far match: %v, want ErrCorrupt", err)
	}

	bomb := Compress(nil, make([]byte, 100<<20))
	readStream(Compress(nil, []byte("warm up")), 16, 16)
	var d *Decompressor
	alloc := allocated(func() {
		if d, err = NewDecompressor(bomb, 128<<20); err != nil {
			t.Fatal(err)
		}
		if _, err = io.ReadFull(d, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		d.Close()
	})
	total := DecompressedTotal()
	if _, err := io.ReadFull(mustDecompressor(t, bomb), make([]byte, 5000)); err != nil || DecompressedTotal()-total != 5000 {
		t.Fatalf("DecompressedTotal counted %d of 5000 bytes (%v)", DecompressedTotal()-total, err)
	}
	if d.Delivered() != 1000 || d.Window() != MaxWindow || alloc > MaxWindow+2<<20 {
		t.Fatalf("the bomb's first bytes: delivered %d, window %d, %d bytes allocated", d.Delivered(), d.Window(), alloc)
	}
	t.Logf("first 1000 bytes of the 100 MiB bomb: %d bytes allocated", alloc)

	// A frame that declares a large window for small content keeps a
	// window of its content.
	small := sample(5000)
	inner := Compress(nil, small)
	var h zstd.Header
	if err := h.Decode(inner); err != nil {
		t.Fatal(err)
	}
	// FCS in 4 bytes, checksum; a window of 32 MiB; then the blocks.
	wide := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x84, (25 - 10) << 3, 0x88, 0x13, 0, 0}
	wide = append(wide, inner[h.HeaderSize:]...)
	if err := h.Decode(wide); err != nil || h.SingleSegment || h.WindowSize != 32<<20 || h.FrameContentSize != 5000 {
		t.Fatalf("window header %+v %v", h, err)
	}
	if out, err := Decompress(wide, 1<<20); err != nil || !bytes.Equal(out, small) {
		t.Fatalf("Decompress of the wide frame: %v", err)
	}
	got, sd, err := readStream(wide, 1<<20, 100)
	if err != nil || !bytes.Equal(got, small) || sd.Window() != int64(len(small)) {
		t.Fatalf("small content in a large window: %v", err)
	}
}

// TestDecompressorRefusals: the refusals of Decompress, streamed: the
// header's before anything is decoded, the content's (short, long,
// broken, trailing content, bad checksum) as an ErrCorrupt read, never
// as a clean end.
func TestDecompressorRefusals(t *testing.T) {
	good := Compress(nil, []byte("hello artifacts"))
	badCRC := bytes.Clone(Compress(nil, sample(5000)))
	badCRC[len(badCRC)-1] ^= 0xff
	for name, c := range map[string]struct {
		in    []byte
		limit int64
		want  error
	}{
		"empty":            {nil, 1 << 20, ErrCorrupt},
		"garbage":          {[]byte("definitely not zstd"), 1 << 20, ErrCorrupt},
		"skippable":        {[]byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}, 1 << 20, ErrCorrupt},
		"over the limit":   {Compress(nil, sample(5000)), 4999, ErrTooLarge},
		"no declared size": {frameHeader(1<<30, nil)[:4], 1 << 30, ErrCorrupt},
		"impossible claim": {frameHeader(8<<20, bytes.Repeat([]byte{7}, 64)), 16 << 20, ErrCorrupt},
	} {
		if _, err := NewDecompressor(c.in, c.limit); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	lying := bytes.Clone(Compress(nil, sample(300<<10)))
	lying[5] -= 2 // a 2-byte content size 512 bytes short: a whole block more
	for name, in := range map[string][]byte{
		"truncated":      good[:len(good)-3],
		"bad checksum":   badCRC,
		"two frames":     append(bytes.Clone(good), good...),
		"trailing bytes": append(bytes.Clone(good), 1, 2, 3),
		"short content":  frameHeader(100, []byte("only ten b")),
		"long content":   frameHeader(5, []byte("only ten b")),
		"lying size":     lying,
	} {
		if _, _, err := readStream(in, 1<<20, 3); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	// Errors stick, and a closed stream reads nothing.
	d, err := NewDecompressor(badCRC, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	_, err1 := io.ReadAll(d)
	_, err2 := d.Read(make([]byte, 10))
	if !errors.Is(err1, ErrCorrupt) || !errors.Is(err2, ErrCorrupt) {
		t.Errorf("errors do not stick: %v, %v", err1, err2)
	}
	d.Close()
	d, _ = NewDecompressor(good, 100)
	d.Close()
	if _, err := d.Read(make([]byte, 4)); !errors.Is(err, ErrClosed) {
		t.Errorf("read after Close: %v", err)
	}
	if err := iotest.TestReader(mustDecompressor(t, Compress(nil, sample(200<<10))), sample(200<<10)); err != nil {
		t.Error(err)
	}
}

func mustDecompressor(t *testing.T, frame []byte) *Decompressor {
	t.Helper()
	d, err := NewDecompressor(frame, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestDecompressorConcurrent: streams share pooled decoders safely.
func TestDecompressorConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			src := sample(10000 + i*40000)
			frame := Compress(nil, src)
			for range 10 {
				got, _, err := readStream(frame, int64(len(src)), 4096)
				if err != nil || !bytes.Equal(got, src) {
					t.Errorf("goroutine %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzDecompressor: streamed, a frame decodes to what Decompress gives or
// fails as it does (the fuzzed frames are far below MaxWindow, so the
// window never differs).
func FuzzDecompressor(f *testing.F) {
	f.Add(Compress(nil, nil), int64(0))
	f.Add(Compress(nil, []byte("abc")), int64(3))
	f.Add(Compress(nil, sample(3000)), int64(4096))
	f.Add(frameHeader(10, []byte("0123456789")), int64(10))
	f.Add(append(Compress(nil, []byte("abc")), Compress(nil, nil)...), int64(3))
	f.Fuzz(func(t *testing.T, in []byte, maxSize int64) {
		maxSize %= 1 << 20
		if maxSize < 0 {
			maxSize = -maxSize
		}
		want, werr := Decompress(in, maxSize)
		got, _, err := readStream(in, maxSize, 1000)
		if (werr == nil) != (err == nil) {
			t.Fatalf("Decompress: %v; streamed: %v", werr, err)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("streamed %d bytes, Decompress %d", len(got), len(want))
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error %v is neither ErrCorrupt nor ErrTooLarge", err)
		}
	})
}
