package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

const evalUsage = `usage: nox-worker eval [--object DATA] [--budget N] [--depth-limit N] (-e FORMULA | FILE | -)
       nox-worker eval --batch [--depth-limit N] < lines of BUDGET|OBJECT|FORMULA

Runs the raw nox engine (reference semantics, null provider: call halts,
look is Unavailable) and prints one JSON object per reduction.
`

// evalResult is the JSON line of one reduction. Quantities are decimal
// strings; error_code is the reference's small integer.
type evalResult struct {
	Status          string `json:"status"`
	Result          string `json:"result,omitempty"`
	Cost            string `json:"cost,omitempty"`
	Remaining       string `json:"remaining,omitempty"`
	Error           string `json:"error,omitempty"`
	ErrorCode       *int   `json:"error_code,omitempty"`
	ResultParticle  string `json:"result_particle,omitempty"`
	ObjectParticle  string `json:"object_particle,omitempty"`
	FormulaParticle string `json:"formula_particle,omitempty"`
}

// maxResultText bounds the printed result: shared subtrees expand in text.
const maxResultText = 64 << 20

func particle(n noun.Noun) string {
	p := n.Particle()
	return hex.EncodeToString(p[:])
}

// evaluate parses and reduces one case.
func evaluate(ctx context.Context, m *reduce.Machine, object, formula string, budget uint64) (evalResult, error) {
	o, err := noun.Parse(object)
	if err != nil {
		return evalResult{Status: "parse_error", Error: "object: " + err.Error()}, nil
	}
	f, err := noun.Parse(formula)
	if err != nil {
		return evalResult{Status: "parse_error", Error: "formula: " + err.Error()}, nil
	}
	out, err := m.Reduce(ctx, o, f, budget)
	if err != nil {
		return evalResult{}, err
	}
	r := evalResult{ObjectParticle: particle(o), FormulaParticle: particle(f)}
	switch out.Status {
	case reduce.OK:
		text, err := noun.AppendText(nil, out.Result, maxResultText)
		if err != nil {
			return evalResult{}, fmt.Errorf("result text exceeds %d bytes", maxResultText)
		}
		r.Status = "ok"
		r.Result = string(text)
		r.Cost = strconv.FormatUint(out.Cost(budget), 10)
		r.Remaining = strconv.FormatUint(out.Remaining, 10)
		r.ResultParticle = particle(out.Result)
	case reduce.Halt:
		r.Status = "halt"
		r.Remaining = strconv.FormatUint(out.Remaining, 10)
	case reduce.Error:
		code := int(out.Kind)
		r.Status = "error"
		r.Error = out.Kind.String()
		r.ErrorCode = &code
	}
	return r, nil
}

func runEval(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	usage := func(w io.Writer) {
		fmt.Fprint(w, evalUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
	}
	fs.Usage = func() {} // printed below: asked for on stdout, after a mistake on stderr
	object := fs.String("object", "0", "the object (subject) the formula is applied to")
	budget := fs.Uint64("budget", 1_000_000, "reduction budget")
	depth := fs.Int("depth-limit", reduce.DefaultDepthLimit, "recursion depth limit (reference: 1000)")
	expr := fs.String("e", "", "the formula text")
	batch := fs.Bool("batch", false, "read BUDGET|OBJECT|FORMULA lines from stdin")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return exitOK
		}
		usage(stderr)
		return exitUsage
	}
	if *depth <= 0 || *depth > reduce.MaxDepthLimit {
		fmt.Fprintf(stderr, "nox-worker eval: --depth-limit must be 1..%d\n", reduce.MaxDepthLimit)
		return exitUsage
	}
	// A run that outgrows half the host's memory stops (exit 1, the
	// reason on stderr) rather than being killed.
	m := reduce.New(reduce.Config{DepthLimit: *depth, MaxCells: worker.DefaultMaxCells()})
	enc := json.NewEncoder(stdout)
	if *batch {
		if *expr != "" || fs.NArg() > 0 {
			fmt.Fprintln(stderr, "nox-worker eval: --batch reads stdin; no formula argument")
			return exitUsage
		}
		return evalBatch(ctx, m, stdin, stdout, stderr)
	}
	formula, code := formulaSource(*expr, fs.Args(), stdin, stderr)
	if code != exitOK {
		return code
	}
	r, err := evaluate(ctx, m, *object, formula, *budget)
	if err != nil {
		return reportAbort(stderr, err)
	}
	if err := enc.Encode(r); err != nil {
		fmt.Fprintln(stderr, "nox-worker eval:", err)
		return exitFailed
	}
	switch r.Status {
	case "ok":
		return exitOK
	case "parse_error":
		return exitUsage
	default:
		return exitFailed
	}
}

// formulaSource picks the formula from -e, a file, or stdin ("-").
func formulaSource(expr string, args []string, stdin io.Reader, stderr io.Writer) (string, int) {
	switch {
	case expr != "" && len(args) == 0:
		return expr, exitOK
	case expr == "" && len(args) == 1:
		var (
			b   []byte
			err error
		)
		if args[0] == "-" {
			b, err = io.ReadAll(io.LimitReader(stdin, maxFormulaBytes+1))
		} else {
			b, err = readBounded(args[0], maxFormulaBytes)
		}
		if err != nil {
			fmt.Fprintln(stderr, "nox-worker eval:", err)
			return "", exitUsage
		}
		if len(b) > maxFormulaBytes {
			fmt.Fprintf(stderr, "nox-worker eval: formula exceeds %d bytes\n", maxFormulaBytes)
			return "", exitUsage
		}
		return string(b), exitOK
	default:
		fmt.Fprint(stderr, evalUsage)
		return "", exitUsage
	}
}

// maxFormulaBytes bounds a formula read from a file or stdin.
const maxFormulaBytes = 64 << 20

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// evalBatch streams one JSON line per input line, in order.
func evalBatch(ctx context.Context, m *reduce.Machine, stdin io.Reader, stdout, stderr io.Writer) int {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 0, 64<<10), maxFormulaBytes)
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	line := 0
	for sc.Scan() {
		line++
		r, err := evalLine(ctx, m, sc.Text())
		if err != nil {
			w.Flush()
			return reportAbort(stderr, err)
		}
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(stderr, "nox-worker eval:", err)
			return exitFailed
		}
		// Streaming: a consumer may wait for each answer before sending
		// the next line.
		if err := w.Flush(); err != nil {
			fmt.Fprintln(stderr, "nox-worker eval:", err)
			return exitFailed
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "nox-worker eval: line %d: %v\n", line+1, err)
		return exitUsage
	}
	return exitOK
}

func evalLine(ctx context.Context, m *reduce.Machine, text string) (evalResult, error) {
	parts := strings.SplitN(text, "|", 3)
	if len(parts) != 3 {
		return evalResult{Status: "parse_error", Error: "want BUDGET|OBJECT|FORMULA"}, nil
	}
	budget, err := strconv.ParseUint(strings.TrimSpace(parts[0]), 10, 64)
	if err != nil {
		return evalResult{Status: "parse_error", Error: "budget: not a u64"}, nil
	}
	return evaluate(ctx, m, parts[1], parts[2], budget)
}

func reportAbort(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "nox-worker eval:", err)
	if errors.Is(err, reduce.ErrCancelled) {
		return exitCancelled
	}
	return exitFailed
}
