package cert

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// corpusBudget is the budget of every corpus case (corpus.txt).
const corpusBudget = 10_000_000_000

// corpusCase is one line of testdata/corpus/corpus.txt.
type corpusCase struct {
	program    string
	size       string
	input      uint64
	reductions uint64
	output     []uint64
}

// loadCorpus reads the corpus manifest, keeping the sizes wanted (all
// when wanted is empty).
func loadCorpus(t testing.TB, wanted ...string) []corpusCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "corpus", "corpus.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []corpusCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 5 {
			t.Fatalf("corpus.txt: %q: want 5 fields", sc.Text())
		}
		c := corpusCase{program: fields[0], size: fields[1]}
		if c.input, err = strconv.ParseUint(fields[2], 10, 64); err == nil {
			c.reductions, err = strconv.ParseUint(fields[3], 10, 64)
		}
		for _, v := range strings.Split(fields[4], ",") {
			if err == nil {
				var x uint64
				x, err = strconv.ParseUint(v, 10, 64)
				c.output = append(c.output, x)
			}
		}
		if err != nil {
			t.Fatalf("corpus.txt: %q: %v", sc.Text(), err)
		}
		if len(wanted) == 0 || slices.Contains(wanted, c.size) {
			cases = append(cases, c)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// corpusProgram parses testdata/corpus/NAME.nox.
func corpusProgram(t testing.TB, name string) noun.Noun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus", name+".nox"))
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, strings.TrimSpace(string(b)))
}

// TestCorpus: every corpus case at the smoke size executes to its listed
// reductions and output, proves to the same statement, and its
// certificate verifies; the call-heavy program is refused by the prover
// (the public profile refuses call). Fails when a program or the
// manifest is edited without the other.
func TestCorpus(t *testing.T) {
	cases := loadCorpus(t, "1e5")
	if len(cases) < 4 {
		t.Fatalf("%d smoke cases in corpus.txt", len(cases))
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.program, func(t *testing.T) {
			prog := corpusProgram(t, c.program)
			inputs := []uint64{c.input}
			out, err := reduce.New(reduce.Config{Provider: reduce.Public{}, DepthLimit: DepthLimit}).
				Reduce(ctx, noun.Subject(inputs), prog, corpusBudget)
			if err != nil || out.Status != reduce.OK {
				t.Fatalf("execute: %+v %v", out, err)
			}
			atoms, _ := noun.AppendAtoms(nil, out.Result, MaxOutputs)
			if got := out.Cost(corpusBudget); got != c.reductions || !slices.Equal(atoms, c.output) {
				t.Fatalf("execute: %d reductions, output %v; corpus.txt says %d, %v", got, atoms, c.reductions, c.output)
			}
			run, err := Prove(ctx, prog, inputs, corpusBudget, ProveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if run.Statement.Reductions != c.reductions || !slices.Equal(run.Statement.Outputs, c.output) {
				t.Fatalf("prove: %d reductions, output %v", run.Statement.Reductions, run.Statement.Outputs)
			}
			if _, _, err := Verify(ctx, run.Certificate, expectOf(&run.Statement), Bounds{}); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The call-heavy program cannot be certified today.
	_, err := Prove(ctx, corpusProgram(t, "calls"), []uint64{4}, corpusBudget, ProveOptions{})
	var unsupported *reduce.UnsupportedServiceError
	if !errors.As(err, &unsupported) {
		t.Fatalf("prove calls: %v, want the public profile's refusal of call", err)
	}
}
