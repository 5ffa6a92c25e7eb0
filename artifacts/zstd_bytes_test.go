package artifacts

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// skippableFrame is a skippable frame (magic 0x184D2A50) of n bytes.
func skippableFrame(n int) []byte {
	f := []byte{0x50, 0x2a, 0x4d, 0x18, byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}
	return append(f, bytes.Repeat([]byte{0xee}, n)...)
}

// TestNothingAfterTheFrame: an artifact is one frame. A trailing empty
// frame and a trailing skippable frame add no content, and so used to
// decode to the same certificate under other bytes (another SHA-256);
// docs/artifacts.md always said skippable frames are refused, and only a
// leading one was. Both readers refuse them now, as they refuse trailing
// bytes.
func TestNothingAfterTheFrame(t *testing.T) {
	content := sample(300 << 10) // several blocks
	for _, good := range [][]byte{Compress(nil, []byte("hello artifacts")), Compress(nil, content), Compress(nil, nil)} {
		for name, in := range map[string][]byte{
			"a trailing empty frame":             append(bytes.Clone(good), Compress(nil, nil)...),
			"a trailing skippable frame":         append(bytes.Clone(good), skippableFrame(16)...),
			"an empty skippable frame":           append(bytes.Clone(good), skippableFrame(0)...),
			"two trailing frames":                append(append(bytes.Clone(good), Compress(nil, nil)...), skippableFrame(3)...),
			"a frame of content":                 append(bytes.Clone(good), Compress(nil, []byte("more"))...),
			"one trailing byte":                  append(bytes.Clone(good), 0),
			"a trailing skippable frame's magic": append(bytes.Clone(good), 0x50, 0x2a, 0x4d, 0x18),
		} {
			if _, err := Decompress(in, 1<<20); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%d-byte frame, %s: Decompress: %v, want ErrCorrupt", len(good), name, err)
			}
			if _, err := NewDecompressor(in, 1<<20); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%d-byte frame, %s: NewDecompressor: %v, want ErrCorrupt", len(good), name, err)
			}
		}
		if got, err := Decompress(good, 1<<20); err != nil || len(got) > 1<<20 {
			t.Fatalf("the frame alone: %v", err)
		}
	}
}

// rawFrame stores content in raw blocks of at most 128 KiB, in a
// single-segment frame without a checksum.
func rawFrame(content []byte) []byte {
	b := frameHeader(uint64(len(content)), nil)
	b = b[:len(b)-3] // frameHeader's one block header
	for off := 0; ; {
		n := min(len(content)-off, maxBlockOut)
		last := uint32(0)
		if off+n == len(content) {
			last = 1
		}
		bh := uint32(n)<<3 | last
		b = append(b, byte(bh), byte(bh>>8), byte(bh>>16))
		b = append(b, content[off:off+n]...)
		if off += n; last == 1 {
			return b
		}
	}
}

// TestArtifactBytesAreNotCanonical: within one frame, the same content
// still has many encodings that both readers accept: other compression
// levels, raw (stored) blocks, a declared window, no checksum. So
// an artifact's SHA-256 names bytes, not a certificate; what identifies
// a certificate is its statement (docs/artifacts.md, "Which bytes are an
// artifact"). This test holds the documentation to the fact: if the
// readers ever accept only one encoding, the documentation changes too.
func TestArtifactBytesAreNotCanonical(t *testing.T) {
	content := sample(200 << 10)
	encode := func(opts ...zstd.EOption) []byte {
		e, err := zstd.NewWriter(nil, append([]zstd.EOption{zstd.WithSingleSegment(true)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		return e.EncodeAll(content, nil)
	}
	encodings := map[string][]byte{
		"Compress":          Compress(nil, content),
		"fastest":           encode(zstd.WithEncoderLevel(zstd.SpeedFastest)),
		"best compression":  encode(zstd.WithEncoderLevel(zstd.SpeedBestCompression)),
		"no checksum":       encode(zstd.WithEncoderCRC(false)),
		"a declared window": encode(zstd.WithSingleSegment(false), zstd.WithWindowSize(MaxWindow)),
		"raw blocks":        rawFrame(content),
	}
	sums := map[[32]byte]string{}
	for name, frame := range encodings {
		got, err := Decompress(frame, 1<<20)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("%s: %v", name, err)
		}
		streamed, _, err := readStream(frame, 1<<20, 4096)
		if err != nil || !bytes.Equal(streamed, content) {
			t.Fatalf("%s, streamed: %v", name, err)
		}
		sums[sha256.Sum256(frame)] = name
	}
	if len(sums) != len(encodings) {
		t.Fatalf("only %d distinct encodings of one content: %v", len(sums), sums)
	}
}
