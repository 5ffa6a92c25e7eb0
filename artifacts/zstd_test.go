package artifacts

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/race"
	"github.com/klauspost/compress/zstd"
)

// sample returns n bytes that compress like a structured artifact would:
// repeated record shapes with varying numbers.
func sample(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "step %d rule %d cost %d subject [%d %d]\n",
			r.Uint32()%100000, r.IntN(12), r.IntN(9), r.Uint64(), r.Uint32())
	}
	return b.Bytes()[:n]
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// allocated returns the bytes allocated on the heap while f runs, the least
// of three runs: the decoder's pooled block decoders set up their buffers
// lazily on first use, which is not what the tests measure.
func allocated(f func()) uint64 {
	least := uint64(1<<64 - 1)
	for range 3 {
		runtime.GC()
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		least = min(least, b.TotalAlloc-a.TotalAlloc)
	}
	return least
}

func TestCompressRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 1023, 1024, 1025, 65791, 65792, 128 << 10, 1 << 20, 9 << 20} {
		for kind, src := range map[string][]byte{"sample": sample(n), "random": randomBytes(n)} {
			c := Compress(nil, src)
			var h zstd.Header
			if err := h.Decode(c); err != nil || !h.HasFCS || h.FrameContentSize != uint64(n) {
				t.Fatalf("%s %d: header %+v, %v: want declared size %d", kind, n, h, err, n)
			}
			got, err := Decompress(c, int64(n))
			if err != nil {
				t.Fatalf("%s %d: Decompress: %v", kind, n, err)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("%s %d: round trip differs", kind, n)
			}
			if n > 0 {
				if _, err := Decompress(c, int64(n-1)); !errors.Is(err, ErrTooLarge) {
					t.Fatalf("%s %d: Decompress with limit n-1: %v, want ErrTooLarge", kind, n, err)
				}
			}
		}
	}
}

func TestCompressAppends(t *testing.T) {
	prefix := []byte("head")
	c := Compress(prefix, []byte("body"))
	if !bytes.HasPrefix(c, []byte("head")) {
		t.Fatal("Compress did not append to dst")
	}
	got, err := Decompress(c[4:], 4)
	if err != nil || string(got) != "body" {
		t.Fatalf("Decompress = %q, %v", got, err)
	}
}

// frameHeader builds a single-segment frame header declaring size, followed
// by one raw last block holding body.
func frameHeader(size uint64, body []byte) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0} // FCS field 8 bytes, single segment
	b = binary.LittleEndian.AppendUint64(b, size)
	bh := uint32(len(body))<<3 | 1 // raw block, last
	b = append(b, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(b, body...)
}

func TestDecompressHugeClaimRejectedBeforeAllocation(t *testing.T) {
	Decompress(Compress(nil, []byte("warm up")), 16) // lazy decoder setup
	frame := frameHeader(1<<30, bytes.Repeat([]byte{7}, 64))
	var err error
	alloc := allocated(func() { _, err = Decompress(frame, 32<<20) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decompress of a 1 GiB claim: %v, want ErrTooLarge", err)
	}
	if alloc > 64<<10 {
		t.Fatalf("Decompress allocated %d bytes before refusing", alloc)
	}
	// With a limit that would allow it, the claim is still impossible for
	// 64 bytes of input, and refused as corrupt before allocation.
	alloc = allocated(func() { _, err = Decompress(frame, 2<<30) })
	if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decompress with a 2 GiB limit: %v", err)
	}
	if alloc > 64<<10 {
		t.Fatalf("Decompress allocated %d bytes before refusing", alloc)
	}
	frame = frameHeader(8<<20, bytes.Repeat([]byte{7}, 64))
	alloc = allocated(func() { _, err = Decompress(frame, 16<<20) })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decompress of an 8 MiB claim in 80 bytes: %v, want ErrCorrupt", err)
	}
	if alloc > 64<<10 {
		t.Fatalf("Decompress allocated %d bytes before refusing", alloc)
	}
}

func TestDecompressWithoutContentSize(t *testing.T) {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// Written in pieces larger than a block, the encoder has to emit the
	// header before it knows the total.
	src := sample(1 << 20)
	for i := 0; i < len(src); i += 200 << 10 {
		w.Write(src[i:min(i+200<<10, len(src))])
		w.Flush()
	}
	w.Close()
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("streaming frame header %+v, %v: expected no content size", h, err)
	}
	if _, err := Decompress(buf.Bytes(), 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decompress of a frame without content size: %v, want ErrCorrupt", err)
	}
}

func TestDecompressZipBomb(t *testing.T) {
	bomb := Compress(nil, make([]byte, 100<<20))
	t.Logf("100 MiB of zeros compress to %d bytes", len(bomb))
	Decompress(Compress(nil, []byte("warm up")), 16)

	var err error
	start := time.Now()
	alloc := allocated(func() { _, err = Decompress(bomb, 1<<20) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Decompress of the bomb: %v, want ErrTooLarge", err)
	}
	if alloc > 64<<10 || time.Since(start) > race.Bound(time.Second) {
		t.Fatalf("refusing the bomb took %v and %d bytes", time.Since(start), alloc)
	}

	// The same bomb lying that it holds only 1 MiB: decoding starts, and
	// must stop at the declared size without growing past it.
	liar := bytes.Clone(bomb)
	if liar[4]&0xe0 != 0x80 { // 4-byte FCS after a window descriptor
		t.Fatalf("unexpected frame header descriptor %#x", liar[4])
	}
	binary.LittleEndian.PutUint32(liar[6:], 1<<20)
	start = time.Now()
	alloc = allocated(func() { _, err = Decompress(liar, 1<<20) })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decompress of the lying bomb: %v, want ErrCorrupt", err)
	}
	if alloc > 1<<20+256<<10 || time.Since(start) > race.Bound(time.Second) {
		t.Fatalf("refusing the lying bomb took %v and %d bytes", time.Since(start), alloc)
	}
	t.Logf("lying bomb refused after %v, %d bytes allocated", time.Since(start), alloc)
}

func TestDecompressRefusals(t *testing.T) {
	good := Compress(nil, []byte("hello artifacts"))
	skippable := []byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}
	badCRC := bytes.Clone(Compress(nil, sample(5000)))
	badCRC[len(badCRC)-1] ^= 0xff
	short := frameHeader(100, []byte("only ten b"))
	cases := map[string][]byte{
		"empty":         nil,
		"garbage":       []byte("definitely not zstd"),
		"magic only":    {0x28, 0xb5, 0x2f, 0xfd},
		"skippable":     skippable,
		"truncated":     good[:len(good)-3],
		"bad checksum":  badCRC,
		"two frames":    append(bytes.Clone(good), good...),
		"short content": short,
	}
	for name, in := range cases {
		if _, err := Decompress(in, 1<<20); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Decompress error %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := Decompress(good, -1); err == nil {
		t.Error("negative maxSize accepted")
	}
}

func TestCompressConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := sample(100000 + i*1000)
			for range 5 {
				got, err := Decompress(Compress(nil, src), int64(len(src)))
				if err != nil || !bytes.Equal(got, src) {
					t.Errorf("goroutine %d: round trip failed: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzDecompress(f *testing.F) {
	f.Add(Compress(nil, nil), int64(0))
	f.Add(Compress(nil, []byte("abc")), int64(3))
	f.Add(Compress(nil, sample(3000)), int64(4096))
	f.Add(frameHeader(10, []byte("0123456789")), int64(10))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00}, int64(100))
	f.Fuzz(func(t *testing.T, in []byte, maxSize int64) {
		maxSize %= 1 << 20
		out, err := Decompress(in, maxSize)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && maxSize >= 0 {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrTooLarge", err)
			}
			return
		}
		if int64(len(out)) > maxSize {
			t.Fatalf("decoded %d bytes with maxSize %d", len(out), maxSize)
		}
		if again, err := Decompress(Compress(nil, out), int64(len(out))); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("re-compressed output does not round trip: %v", err)
		}
	})
}

func BenchmarkCompress4MiB(b *testing.B) {
	src := sample(4 << 20)
	var c []byte
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		c = Compress(c[:0], src)
	}
	b.ReportMetric(float64(len(src))/float64(len(c)), "ratio")
}

func BenchmarkDecompress4MiB(b *testing.B) {
	src := sample(4 << 20)
	c := Compress(nil, src)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Decompress(c, int64(len(src))); err != nil {
			b.Fatal(err)
		}
	}
}
