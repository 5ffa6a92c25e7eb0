package artifacts

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// readFrom reads a frame through NewDecompressorFrom (sized) or
// NewStreamDecompressorFrom (unsized), its input delivered by wrap.
func readFrom(src []byte, limit int64, unsized bool, wrap func(io.Reader) io.Reader) ([]byte, error) {
	open := NewDecompressorFrom
	if unsized {
		open = NewStreamDecompressorFrom
	}
	d, err := open(wrap(bytes.NewReader(src)), int64(len(src)), limit)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return io.ReadAll(d)
}

// readMem is readFrom's in-memory counterpart.
func readMem(src []byte, limit int64, unsized bool) ([]byte, error) {
	open := NewDecompressor
	if unsized {
		open = NewStreamDecompressor
	}
	d, err := open(src, limit)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return io.ReadAll(d)
}

// sameAsInMemory fails t unless a frame read from a reader gives what
// the same frame read from memory gives: the same content, or an error
// of the same kind (ErrCorrupt, ErrTooLarge).
func sameAsInMemory(t *testing.T, name string, src []byte, limit int64, unsized bool) {
	t.Helper()
	want, werr := readMem(src, limit, unsized)
	wraps := map[string]func(io.Reader) io.Reader{
		"plain":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"data+EOF": iotest.DataErrReader,
	}
	for wname, wrap := range wraps {
		if wname == "one byte" && len(src) > 64<<10 {
			continue // the others read it in the buffer's reads
		}
		got, err := readFrom(src, limit, unsized, wrap)
		switch {
		case (werr == nil) != (err == nil):
			t.Errorf("%s (%s): from a reader %v, in memory %v", name, wname, err, werr)
		case err == nil && !bytes.Equal(got, want):
			t.Errorf("%s (%s): %d bytes from a reader, %d in memory", name, wname, len(got), len(want))
		case err != nil && errors.Is(err, ErrCorrupt) != errors.Is(werr, ErrCorrupt):
			t.Errorf("%s (%s): from a reader %v, in memory %v", name, wname, err, werr)
		case err != nil && errors.Is(err, ErrTooLarge) != errors.Is(werr, ErrTooLarge):
			t.Errorf("%s (%s): from a reader %v, in memory %v", name, wname, err, werr)
		}
	}
}

// TestDecompressorFromMatchesInMemory: a frame read from an io.Reader
// (an artifact's file, read by the supervisor as it verifies) is read
// exactly as the same frame in memory: the same content, the same
// refusals, among them a byte, an empty frame or a skippable frame
// after the frame, found by following its block headers as they pass.
// Fails before NewDecompressorFrom existed (it did not compile).
func TestDecompressorFromMatchesInMemory(t *testing.T) {
	good := Compress(nil, []byte("hello artifacts"))
	big := Compress(nil, sample(1<<20)) // eight blocks
	unsized := streamed(t, sample(300<<10), 4096)
	badCRC := bytes.Clone(Compress(nil, sample(5000)))
	badCRC[len(badCRC)-1] ^= 0xff
	lying := bytes.Clone(Compress(nil, sample(300<<10)))
	lying[5] -= 2
	skippable := []byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}
	cases := map[string][]byte{
		"good":              good,
		"big":               big,
		"empty content":     Compress(nil, nil),
		"legacy":            legacyCompress(sample(100 << 10)),
		"empty":             nil,
		"garbage":           []byte("definitely not zstd"),
		"skippable":         skippable,
		"impossible claim":  frameHeader(8<<20, bytes.Repeat([]byte{7}, 64)),
		"truncated":         good[:len(good)-3],
		"header only":       good[:6],
		"bad checksum":      badCRC,
		"two frames":        append(bytes.Clone(good), good...),
		"empty frame after": append(bytes.Clone(good), Compress(nil, nil)...),
		"skippable after":   append(bytes.Clone(good), skippable...),
		"trailing bytes":    append(bytes.Clone(good), 1, 2, 3),
		"trailing byte":     append(bytes.Clone(big), 0),
		"short content":     frameHeader(100, []byte("only ten b")),
		"long content":      frameHeader(5, []byte("only ten b")),
		"lying size":        lying,
		"unsized":           unsized,
		"unsized trailing":  append(bytes.Clone(unsized), 9),
		"unsized cut":       unsized[:len(unsized)/2],
	}
	for name, src := range cases {
		sameAsInMemory(t, name, src, 1<<30, false)
		sameAsInMemory(t, name+" (unsized allowed)", src, 1<<30, true)
	}
	sameAsInMemory(t, "over the limit", Compress(nil, sample(5000)), 4999, false)
	sameAsInMemory(t, "unsized over the limit", unsized, 100<<10, true)
}

// TestDecompressorFromReportsItsInput: the input's own failure (an I/O
// error, a Reader's ErrTooLarge) is what the stream reports, not a
// corrupt frame; a frame followed by more bytes than it was said to
// have is refused. Fails before NewDecompressorFrom existed.
func TestDecompressorFromReportsItsInput(t *testing.T) {
	frame := Compress(nil, sample(1<<20))
	broken := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(frame[:len(frame)/2]), iotest.ErrReader(broken))
	d, err := NewDecompressorFrom(r, int64(len(frame)), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(d)
	d.Close()
	if !errors.Is(err, broken) || errors.Is(err, ErrCorrupt) {
		t.Errorf("a failing input: %v, want its own error", err)
	}
	r = io.MultiReader(bytes.NewReader(frame[:len(frame)/2]), iotest.ErrReader(ErrTooLarge))
	d, err = NewStreamDecompressorFrom(r, int64(len(frame)), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = io.ReadAll(d); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a reader past its limit: %v, want ErrTooLarge", err)
	}
	d.Close()
	if _, err := NewDecompressorFrom(bytes.NewReader(frame[:10]), int64(len(frame)), 1<<30); !errors.Is(err, ErrCorrupt) {
		t.Errorf("an input shorter than its size: %v, want ErrCorrupt", err)
	}
	if err := iotest.TestReader(mustDecompressorFrom(t, Compress(nil, sample(200<<10))), sample(200<<10)); err != nil {
		t.Error(err)
	}
}

func mustDecompressorFrom(t *testing.T, frame []byte) *Decompressor {
	t.Helper()
	d, err := NewDecompressorFrom(bytes.NewReader(frame), int64(len(frame)), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func FuzzDecompressorFrom(f *testing.F) {
	good := Compress(nil, []byte("abc"))
	f.Add(good, int64(3), false)
	f.Add(Compress(nil, sample(3000)), int64(4096), false)
	f.Add(append(bytes.Clone(good), Compress(nil, nil)...), int64(3), true)
	f.Add(frameHeader(10, []byte("0123456789")), int64(10), true)
	f.Fuzz(func(t *testing.T, in []byte, limit int64, unsized bool) {
		limit %= 1 << 20
		if limit < 0 {
			limit = -limit
		}
		sameAsInMemory(t, "fuzz", in, limit, unsized)
	})
}
