package artifacts

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// compressStream writes src as one frame through a Compressor (no
// declared size, an 8 MiB window), in writes of 64 KiB as a prover does.
func compressStream(t *testing.T, src []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	c, err := NewCompressor(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(src); off += 64 << 10 {
		if _, err := c.Write(src[off:min(len(src), off+64<<10)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads d to its end (io.EOF) in reads of 1000 bytes.
func readAll(t *testing.T, d *Decompressor) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 1000)
	for {
		n, err := d.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(out), err)
		}
	}
}

// TestDecompressorPrefix: a prefix reader of a long frame delivers
// exactly the content's first n bytes, then io.EOF, keeping a window of
// the prefix and a block (512 KiB for 256 KiB), not the frame's (4 MiB
// for 3 MiB of content, 8 MiB for more), also when the content past the
// prefix matches far back (a 1 MiB stretch repeated); a frame shorter
// than the prefix reads whole, to its checked end; and a sized frame
// (Compress) reads the same through NewDecompressorPrefix. New API: it
// did not exist before (a statement read decoded with the whole
// window's ring, 8 MiB for a long certificate).
func TestDecompressorPrefix(t *testing.T) {
	const prefix = 256 << 10
	random := randomBytes(1 << 20)
	long := append(append(sample(1<<20), random...), random...) // 3 MiB, far matches
	for _, c := range []struct {
		name       string
		content    []byte
		frame      []byte
		sized      bool
		wantWindow int64
	}{
		{"stream, 3 MiB", long, compressStream(t, long), false, 512 << 10},
		// Content that Close finds whole in the first block declares its size.
		{"stream, 100 KiB", long[:100<<10], compressStream(t, long[:100<<10]), false, 100 << 10},
		{"sized, 3 MiB", long, Compress(nil, long), true, 512 << 10},
		{"sized, 100 KiB", long[:100<<10], Compress(nil, long[:100<<10]), true, 100 << 10},
	} {
		var (
			d   *Decompressor
			err error
		)
		if c.sized {
			d, err = NewDecompressorPrefix(c.frame, 8<<20, prefix)
		} else {
			d, err = NewStreamDecompressorPrefix(c.frame, 8<<20, prefix)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := readAll(t, d)
		want := c.content[:min(len(c.content), prefix)]
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: read %d bytes, not the content's first %d", c.name, len(got), len(want))
		}
		if d.Window() != c.wantWindow {
			t.Errorf("%s: window %d, want %d", c.name, d.Window(), c.wantWindow)
		}
		if n, err := d.Read(make([]byte, 10)); n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("%s: a read after the end: %d, %v", c.name, n, err)
		}
		d.Close()
		// The whole frame's reader keeps the frame's window.
		full, err := NewStreamDecompressor(c.frame, 8<<20)
		if err != nil {
			t.Fatal(err)
		}
		if all := readAll(t, full); !bytes.Equal(all, c.content) {
			t.Fatalf("%s: the whole frame reads %d bytes, want %d", c.name, len(all), len(c.content))
		}
		t.Logf("%s: prefix window %d, whole frame's %d", c.name, c.wantWindow, full.Window())
		full.Close()
	}
	// A corrupt block within the prefix is reported as NewDecompressor's.
	frame := compressStream(t, long)
	bad := bytes.Clone(frame)
	bad[len(bad)/100] ^= 0xff
	d, err := NewStreamDecompressorPrefix(bad, 8<<20, prefix)
	if err == nil {
		_, err = io.Copy(io.Discard, d)
		d.Close()
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a broken block in the prefix: %v, want ErrCorrupt", err)
	}
}
