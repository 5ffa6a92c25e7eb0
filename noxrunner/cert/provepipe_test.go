package cert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// TestMain lets the package's tests run with the prover's pipeline
// forced on or off: NOX_CERT_PIPELINE=on|off (default: usePipeline's
// rule, on with two CPUs).
func TestMain(m *testing.M) {
	switch os.Getenv("NOX_CERT_PIPELINE") {
	case "on":
		pipelineMode = pipelineOn
	case "off":
		pipelineMode = pipelineOff
	case "", "auto":
	default:
		fmt.Fprintln(os.Stderr, "NOX_CERT_PIPELINE is on, off or auto")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// withPipeline runs the rest of the test with the pipeline mode set.
func withPipeline(t testing.TB, mode int) {
	old := pipelineMode
	pipelineMode = mode
	t.Cleanup(func() { pipelineMode = old })
}

// waitNoProverGoroutine fails the test if a pipeline's prover goroutine
// is still alive once it has had the time to exit. ProveTo returns once
// the goroutine has signalled its end (closed done), which it does in
// its last deferred call: the goroutine may then still be on its way
// out, so this waits for it, as supervisor/fencing's waitGoroutines
// does; a goroutine that outlived ProveTo for good would still be there
// after 10 s.
func waitNoProverGoroutine(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stacks := allStacks()
		n := strings.Count(stacks, "(*provePipe).record(")
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d prover goroutines alive after ProveTo:\n%s", n, stacks)
		}
		time.Sleep(time.Millisecond)
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// proveBoth proves program in v2 sequentially and pipelined, and
// returns both certificates and errors.
func proveBoth(t testing.TB, ctx context.Context, w func() io.Writer, program noun.Noun, inputs []uint64, budget uint64, opt ProveOptions) (seq, piped []byte, seqErr, pipedErr error) {
	t.Helper()
	var out [2][]byte
	var errs [2]error
	for i, mode := range []int{pipelineOff, pipelineOn} {
		old := pipelineMode
		pipelineMode = mode
		var buf bytes.Buffer
		var dst io.Writer = &buf
		if w != nil {
			dst = w()
		}
		_, errs[i] = ProveTo(ctx, dst, program, inputs, budget, opt)
		pipelineMode = old
		out[i] = buf.Bytes()
	}
	return out[0], out[1], errs[0], errs[1]
}

// TestPipelinedCertificatesAreTheSequentials: with the prover on its
// own goroutine, every corpus case at the smoke size (under the
// profile's collection threshold and a small one, with and without
// censuses), a deep result and a hash tree, and every v2-provable
// reference case (one in four under -race) prove to the sequential
// prover's certificate, byte for byte.
func TestPipelinedCertificatesAreTheSequentials(t *testing.T) {
	ctx := context.Background()
	for _, c := range loadCorpus(t, "1e5") {
		prog := corpusProgram(t, c.program)
		for _, opt := range []ProveOptions{{}, {wmin: 64}, {MaxCells: 1 << 20}, {MaxCells: 1 << 20, wmin: 4096, MaxMemory: 1 << 30}} {
			seq, piped, seqErr, pipedErr := proveBoth(t, ctx, nil, prog, []uint64{c.input}, corpusBudget, opt)
			if seqErr != nil || pipedErr != nil {
				t.Fatalf("%s %+v: sequential: %v, pipelined: %v", c.program, opt, seqErr, pipedErr)
			}
			if !bytes.Equal(seq, piped) {
				t.Fatalf("%s %+v: the pipelined certificate (%d bytes) is not the sequential one (%d bytes)", c.program, opt, len(piped), len(seq))
			}
		}
	}
	// Deep results (interned by long walks, the memo emptied as it
	// outgrows the table) and a tree of hashes.
	for _, c := range []struct {
		name, program string
		input         uint64
	}{{"hash tree", hashTree, 11}, {"deep cons", hostile.DeepBranch(), 11}} {
		for _, opt := range []ProveOptions{{}, {wmin: 4096, MaxCells: 1 << 20}} {
			seq, piped, seqErr, pipedErr := proveBoth(t, ctx, nil, parse(t, c.program), []uint64{c.input}, 1<<40, opt)
			if seqErr != nil || pipedErr != nil || !bytes.Equal(seq, piped) {
				t.Fatalf("%s %+v: sequential %d bytes, %v; pipelined %d bytes, %v", c.name, opt, len(seq), seqErr, len(piped), pipedErr)
			}
		}
	}
	compared := 0
	for i, c := range okVectors(t, "") {
		if (i+1)%pipelineVectorEvery != 0 {
			continue
		}
		wmin := uint64(1 + compared%16)
		seq, piped, seqErr, pipedErr := proveBoth(t, ctx, nil, c.prog, nil, c.budget, ProveOptions{wmin: wmin})
		if (seqErr == nil) != (pipedErr == nil) || seqErr != nil && seqErr.Error() != pipedErr.Error() {
			t.Fatalf("%s: sequential: %v, pipelined: %v", c.id, seqErr, pipedErr)
		}
		if !bytes.Equal(seq, piped) {
			t.Fatalf("%s: the pipelined certificate is not the sequential one", c.id)
		}
		if seqErr == nil {
			compared++
		}
	}
	if compared < 3000/pipelineVectorEvery {
		t.Fatalf("only %d cases compared", compared)
	}
	// A prover goroutine left behind by any of them would still be
	// there.
	waitNoProverGoroutine(t)
}

// failingWriter fails every write after the first `ok` bytes.
type failingWriter struct{ ok, n int }

var errWriteFailed = errors.New("disk full")

func (f *failingWriter) Write(b []byte) (int, error) {
	if f.n+len(b) > f.ok {
		return 0, errWriteFailed
	}
	f.n += len(b)
	return len(b), nil
}

// TestPipelinedProverErrors: a bound the prover goroutine hits (the
// certificate's bytes, the table's nodes, what the run and the record
// hold) or a write error stops the run with the sequential prover's
// error, and so does an error of the machine (its cell or step limit, a
// cancelled context); no prover goroutine outlives ProveTo.
func TestPipelinedProverErrors(t *testing.T) {
	ctx := context.Background()
	spin := corpusProgram(t, "spin")
	// hashchain at 2^13 links: 11 new nodes a link, none collected
	// under a large threshold; tree at depth 14: 2^15 pairs held.
	chain, tree := corpusProgram(t, "hashchain"), corpusProgram(t, "tree")
	cases := []struct {
		name  string
		prog  noun.Noun
		input uint64
		opt   ProveOptions
		w     func() io.Writer
		want  error
	}{
		{"MaxBytes", spin, 17, ProveOptions{MaxBytes: 100 << 10}, nil, ErrTooLarge},
		{"MaxNodes", chain, 13, ProveOptions{MaxNodes: 50_000, wmin: 1 << 20}, nil, reduce.ErrCellLimit},
		{"MaxMemory", chain, 13, ProveOptions{MaxMemory: 8 << 20, wmin: 1 << 20}, nil, reduce.ErrCellLimit},
		{"write", spin, 17, ProveOptions{}, func() io.Writer { return &failingWriter{ok: 1} }, errWriteFailed},
		{"write later", spin, 17, ProveOptions{}, func() io.Writer { return &failingWriter{ok: 200 << 10} }, errWriteFailed},
		{"MaxCells", tree, 14, ProveOptions{MaxCells: 10_000}, nil, reduce.ErrCellLimit},
		{"MaxSteps", spin, 17, ProveOptions{MaxSteps: 50_000}, nil, reduce.ErrStepLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, seqErr, pipedErr := proveBoth(t, ctx, c.w, c.prog, []uint64{c.input}, corpusBudget, c.opt)
			waitNoProverGoroutine(t)
			if !errors.Is(seqErr, c.want) || !errors.Is(pipedErr, c.want) {
				t.Fatalf("sequential: %v, pipelined: %v; want %v", seqErr, pipedErr, c.want)
			}
			// What the prover holds differs by the pipeline's
			// records; the other messages are the same.
			if c.name != "MaxMemory" && seqErr.Error() != pipedErr.Error() {
				t.Fatalf("sequential: %v, pipelined: %v", seqErr, pipedErr)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// Cancelled at the first write, from the prover's side:
		// the machine is running on.
		w := func() io.Writer { return writerFunc(func(b []byte) (int, error) { cancel(); return len(b), nil }) }
		_, _, seqErr, pipedErr := proveBoth(t, cctx, w, spin, []uint64{17}, corpusBudget, ProveOptions{})
		waitNoProverGoroutine(t)
		if !errors.Is(seqErr, reduce.ErrCancelled) || !errors.Is(pipedErr, reduce.ErrCancelled) {
			t.Fatalf("sequential: %v, pipelined: %v", seqErr, pipedErr)
		}
	})
	t.Run("not provable", func(t *testing.T) {
		// A halt, after the prover has recorded every step.
		_, _, seqErr, pipedErr := proveBoth(t, ctx, nil, spin, []uint64{17}, 100_000, ProveOptions{})
		waitNoProverGoroutine(t)
		if !errors.Is(seqErr, ErrNotProvable) || seqErr.Error() != pipedErr.Error() {
			t.Fatalf("sequential: %v, pipelined: %v", seqErr, pipedErr)
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// goroutineID is the id runtime.Stack names the calling goroutine by.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// TestPipelinedProverWritesOffTheMachine: pipelined, the certificate is
// written as the run goes by a goroutine other than the one that runs
// the machine (ProveTo's, which writes the trailer once the prover
// goroutine has returned), and sequential by that one. Fails before the
// pipeline (every write was on ProveTo's goroutine).
func TestPipelinedProverWritesOffTheMachine(t *testing.T) {
	prog := corpusProgram(t, "spin")
	for _, mode := range []int{pipelineOn, pipelineOff} {
		withPipeline(t, mode)
		self := goroutineID()
		var writers []string
		w := writerFunc(func(b []byte) (int, error) {
			writers = append(writers, goroutineID())
			return len(b), nil
		})
		if _, err := ProveTo(context.Background(), w, prog, []uint64{16}, corpusBudget, ProveOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(writers) < 3 {
			t.Fatalf("%d writes", len(writers))
		}
		if last := writers[len(writers)-1]; last != self {
			t.Fatalf("mode %d: the trailer written by goroutine %s, ProveTo ran on %s", mode, last, self)
		}
		for _, g := range writers[:len(writers)-1] {
			if (g == self) != (mode == pipelineOff) {
				t.Fatalf("mode %d: written by goroutine %s, ProveTo ran on %s", mode, g, self)
			}
		}
	}
}

// TestPipelinedProverErrorStopsTheMachine: when the prover goroutine
// fails (here its first write), the machine stops at its next hand-off
// at the latest: it has run at most the pool's records past the step
// that failed (and the calls still open above it), not the rest of the
// run.
func TestPipelinedProverErrorStopsTheMachine(t *testing.T) {
	ctx := context.Background()
	prog := corpusProgram(t, "spin")
	subject := noun.Subject([]uint64{17}) // 2^18 calls
	p, m, q := newProverPiped(ProveOptions{}, true)
	p.startV2(&failingWriter{ok: 0}, ProveOptions{})
	p.v2.pipelined = true
	p.v2.roots = append(p.v2.roots[:0], p.intern(prog), p.intern(subject))
	q.start(ctx)
	_, err := m.Reduce(ctx, subject, prog, corpusBudget)
	q.abandon()
	if !errors.Is(err, errWriteFailed) {
		t.Fatalf("reduce: %v, want the prover's write error", err)
	}
	failed, ran := p.calls, m.Stats().Steps
	t.Logf("the prover failed at step %d, the machine stopped after %d", failed, ran)
	if limit := failed + pipeBatches*pipeBatch + 64; ran > limit {
		t.Fatalf("the prover failed at step %d, the machine ran %d steps (at most %d)", failed, ran, limit)
	}
	waitNoProverGoroutine(t)
}
