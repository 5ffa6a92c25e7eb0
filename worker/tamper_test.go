package worker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The tampering tests prove add(3, 5) under budget 1000 and hand the worker
// a verify job for exactly that computation with a changed certificate.
// cert's own tests cover the format; these cover the worker's path to it:
// the zstd framing, the codes, and the job binding.
const tamperBudget = 1000

var tamperInputs = []uint64{3, 5}

// certLayout locates the statement's fields in an uncompressed
// certificate (docs/certificate.md).
type certLayout struct {
	profile    int   // start of the profile id
	program    int   // start of the program tokens
	programLen int   // their length
	inputs     []int // start of each input's varint
	outputs    []int
	reductions int
	budget     int
	witness    int // start of the witness (its call count)
}

func layout(t testing.TB, raw []byte) certLayout {
	t.Helper()
	st, err := cert.ReadStatement(raw)
	if err != nil {
		t.Fatal(err)
	}
	var l certLayout
	pos := len(cert.Magic)
	pos += uvarintLen(uint64(len(cert.Profile)))
	l.profile = pos
	pos += len(cert.Profile)
	pos += uvarintLen(uint64(len(st.Program)))
	l.program, l.programLen = pos, len(st.Program)
	pos += len(st.Program)
	pos += uvarintLen(uint64(len(st.Inputs)))
	for _, v := range st.Inputs {
		l.inputs = append(l.inputs, pos)
		pos += uvarintLen(v)
	}
	pos += uvarintLen(uint64(len(st.Outputs)))
	for _, v := range st.Outputs {
		l.outputs = append(l.outputs, pos)
		pos += uvarintLen(v)
	}
	l.reductions = pos
	pos += uvarintLen(st.Reductions)
	l.budget = pos
	pos += uvarintLen(st.Budget)
	l.witness = pos
	if !bytes.Equal(raw[l.program:l.program+l.programLen], st.Program) {
		t.Fatal("layout: program tokens not where expected")
	}
	return l
}

func uvarintLen(v uint64) int { return len(binary.AppendUvarint(nil, v)) }

// replaceVarint swaps the varint at pos for v's.
func replaceVarint(raw []byte, pos int, v uint64) []byte {
	_, n := binary.Uvarint(raw[pos:])
	out := append([]byte(nil), raw[:pos]...)
	out = binary.AppendUvarint(out, v)
	return append(out, raw[pos+n:]...)
}

func flip(raw []byte, pos int, mask byte) []byte {
	out := append([]byte(nil), raw...)
	out[pos] ^= mask
	return out
}

// verifyCode runs a verify job for add(3, 5) with the given artifact file
// bytes and returns the error.
func verifyCode(t testing.TB, w *Worker, file []byte, expected []uint64) error {
	t.Helper()
	return verifyJob(t, w, addNox, tamperInputs, tamperBudget, file, expected)
}

func verifyJob(t testing.TB, w *Worker, src string, inputs []uint64, budget uint64, file []byte, expected []uint64) error {
	t.Helper()
	j := newJob(t, protocol.OpVerify, src, inputs, budget)
	j.Artifact = file
	j.ExpectedOutput = expected
	_, _, err := runSpec(t, w, j.bytes(t))
	return err
}

func certificateOf(t testing.TB, src string, inputs []uint64, budget uint64) []byte {
	t.Helper()
	f, err := noun.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	run, err := cert.Prove(context.Background(), f, inputs, budget, cert.ProveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return run.Certificate
}

func TestVerifyTampering(t *testing.T) {
	w := newWorker(t, Config{})
	raw := certificateOf(t, addNox, tamperInputs, tamperBudget)
	if err := verifyCode(t, w, artifacts.Compress(nil, raw), []uint64{8}); err != nil {
		t.Fatalf("untouched certificate: %v", err)
	}
	l := layout(t, raw)

	type tc struct {
		name string
		raw  []byte
		code protocol.Code
	}
	var cases []tc
	add := func(code protocol.Code, raw []byte, format string, args ...any) {
		cases = append(cases, tc{fmt.Sprintf(format, args...), raw, code})
	}
	rejected, mismatch := protocol.CodeProofRejected, protocol.CodeClaimMismatch

	for i := range cert.Magic {
		add(rejected, flip(raw, i, 0x20), "magic byte %d", i)
	}
	for i := range len(cert.Profile) {
		add(rejected, flip(raw, l.profile+i, 0x01), "profile byte %d", i)
	}
	// The statement is compared with the job before the witness is read:
	// a program that still decodes is another job's, one that does not is
	// no statement at all.
	for i := range l.programLen {
		b := flip(raw, l.program+i, 0x01)
		code := rejected
		if _, used, err := noun.DecodeTokens(b[l.program:l.program+l.programLen], cert.MaxProgramNodes, cert.MaxProgramDepth); err == nil && used == l.programLen {
			code = mismatch
		}
		add(code, b, "program token byte %d", i)
	}
	add(rejected, flip(raw, l.program-1, 0x01), "program length")
	for i, pos := range l.inputs {
		add(mismatch, replaceVarint(raw, pos, tamperInputs[i]+1), "input %d", i)
	}
	for i, pos := range l.outputs {
		add(rejected, replaceVarint(raw, pos, 9), "output %d", i)
	}
	add(rejected, replaceVarint(raw, l.reductions, 4), "reductions up")
	add(rejected, replaceVarint(raw, l.reductions, 2), "reductions down")
	add(rejected, replaceVarint(raw, l.budget, 2), "budget below the cost")
	// A larger or smaller budget that still covers the cost gives a valid
	// certificate of another computation: only the job binding rejects it.
	add(mismatch, replaceVarint(raw, l.budget, tamperBudget+1), "budget up")
	add(mismatch, replaceVarint(raw, l.budget, tamperBudget-1), "budget down")
	for i := l.witness; i < len(raw); i++ {
		for _, m := range []byte{0x01, 0x02, 0x80, 0xff} {
			add(rejected, flip(raw, i, m), "witness byte %d ^ %#x", i-l.witness, m)
		}
	}
	for n := 0; n < len(raw); n++ {
		add(rejected, raw[:n], "truncated to %d bytes", n)
	}
	add(rejected, append(bytes.Clone(raw), 0), "trailing zero")
	add(rejected, append(bytes.Clone(raw), raw...), "doubled")

	// Valid certificates of other computations.
	add(mismatch, certificateOf(t, addNox, []uint64{4, 5}, tamperBudget), "another input")
	add(mismatch, certificateOf(t, addNox, []uint64{5, 3}, tamperBudget), "inputs swapped, same output")
	add(mismatch, certificateOf(t, addNox, []uint64{3, 5, 0}, tamperBudget), "an extra input")
	add(mismatch, certificateOf(t, "[7 [[0 2] [0 6]]]", tamperInputs, tamperBudget), "another program")
	add(mismatch, certificateOf(t, "[5 [[0 6] [0 2]]]", tamperInputs, tamperBudget), "operands swapped, same output")
	add(mismatch, certificateOf(t, addNox, tamperInputs, 2*tamperBudget), "another budget")

	for _, c := range cases {
		if err := verifyCode(t, w, artifacts.Compress(nil, c.raw), nil); protocol.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	t.Logf("%d tampered certificates", len(cases))

	// Every witness byte of a longer run, with hashes, branches and
	// composes in it.
	src, inputs := example(t, "hashchain.nox"), []uint64{2, 9}
	long := certificateOf(t, src, inputs, tamperBudget)
	if err := verifyJob(t, w, src, inputs, tamperBudget, artifacts.Compress(nil, long), nil); err != nil {
		t.Fatal(err)
	}
	ll := layout(t, long)
	for i := ll.witness; i < len(long); i++ {
		for _, m := range []byte{0x01, 0x40, 0xff} {
			err := verifyJob(t, w, src, inputs, tamperBudget, artifacts.Compress(nil, flip(long, i, m)), nil)
			if protocol.CodeOf(err) != rejected {
				t.Errorf("hashchain witness byte %d ^ %#x: %v", i-ll.witness, m, err)
			}
		}
	}

	// The expected output is part of the binding when the job states one.
	wantCode(t, verifyCode(t, w, artifacts.Compress(nil, raw), []uint64{9}), mismatch, "output")
	wantCode(t, verifyCode(t, w, artifacts.Compress(nil, raw), []uint64{8, 0}), mismatch, "output")
}

// zstdFrame builds a single-segment frame header declaring size followed by
// one raw last block holding body.
func zstdFrame(size uint64, body []byte) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}
	b = binary.LittleEndian.AppendUint64(b, size)
	bh := uint32(len(body))<<3 | 1
	b = append(b, byte(bh), byte(bh>>8), byte(bh>>16))
	return append(b, body...)
}

func TestVerifyFraming(t *testing.T) {
	w := newWorker(t, Config{})
	raw := certificateOf(t, addNox, tamperInputs, tamperBudget)
	good := artifacts.Compress(nil, raw)

	var stream bytes.Buffer
	enc, _ := zstd.NewWriter(&stream)
	enc.Write(raw)
	enc.Close()
	if err := verifyCode(t, w, stream.Bytes(), nil); protocol.CodeOf(err) != protocol.CodeProofRejected {
		// A streamed frame does not declare its size up front.
		t.Errorf("streamed frame: %v", err)
	}

	badChecksum := bytes.Clone(good)
	badChecksum[len(badChecksum)-1] ^= 1
	for _, c := range []struct {
		name string
		file []byte
		code protocol.Code
	}{
		{"uncompressed", raw, protocol.CodeProofRejected},
		{"truncated frame", good[:len(good)-5], protocol.CodeProofRejected},
		{"bad checksum", badChecksum, protocol.CodeProofRejected},
		{"trailing garbage", append(bytes.Clone(good), 1, 2, 3), protocol.CodeProofRejected},
		{"two frames", append(bytes.Clone(good), good...), protocol.CodeProofRejected},
		{"size lies low", zstdFrame(uint64(len(raw)-1), raw), protocol.CodeProofRejected},
		{"size lies high", zstdFrame(uint64(len(raw)+1), raw), protocol.CodeProofRejected},
		{"raw block, honest size", zstdFrame(uint64(len(raw)), raw), ""},
		{"declared 1 TiB", zstdFrame(1<<40, raw[:16]), protocol.CodeArtifactTooLarge},
		{"declared just over the bound", zstdFrame(DefaultMaxCertificateBytes+1, raw[:16]), protocol.CodeArtifactTooLarge},
		{"empty", nil, protocol.CodeInvalidJob}, // a verify job needs an artifact
	} {
		if err := verifyCode(t, w, c.file, nil); protocol.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %q", c.name, err, c.code)
		}
	}

	// A worker with a small bound refuses a real certificate above it.
	small := newWorker(t, Config{MaxCertificateBytes: int64(len(raw) - 1)})
	wantCode(t, verifyCode(t, small, good, nil), protocol.CodeArtifactTooLarge, "")
	// The job's artifact limit bounds the compressed bytes, at admission.
	j := newJob(t, protocol.OpVerify, addNox, tamperInputs, tamperBudget)
	j.Artifact = good
	j.Limits.ArtifactBytes = uint64(len(good) - 1)
	_, _, err := runSpec(t, w, j.bytes(t))
	wantCode(t, err, protocol.CodeArtifactTooLarge, "")

	// Oversize declarations are refused before anything is decompressed.
	w.ReadStatement(good, tamperBudget) // the decoder's lazy setup
	for _, file := range [][]byte{zstdFrame(1<<40, raw[:64]), zstdFrame(DefaultMaxCertificateBytes, raw[:64])} {
		var err error
		alloc := allocated(func() { _, err = w.ReadStatement(file, 1<<40) })
		if err == nil || alloc > 64<<10 {
			t.Errorf("declared %d: %v after allocating %d bytes", binary.LittleEndian.Uint64(file[5:]), err, alloc)
		}
	}
}

func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}
