// Package hostile builds the attacks of issue #16 on the verifier, for the
// tests of every layer that meets them (cert, worker, nox-worker, the
// supervisor): a tiny artifact whose one disclosed result expands into
// millions of nodes, and a small program that builds a formula millions
// of levels deep at run time and then runs it.
package hostile

import (
	"fmt"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// QuoteProgram is the program of the nested-result attack: one quote step
// whose result is the atom 0.
const QuoteProgram = "[1 0]"

// NestedPairs is the attack's size: 16 Mi nested pair definitions (32 MiB
// of witness, about 1.1 KB after zstd).
const NestedPairs = 16 << 20

// NestedResult is a certificate of QuoteProgram under budget (no inputs)
// whose single result defines pairs fresh nested pairs, [[[… [a 0] …] 0]
// 0]: 0x01 × pairs, a new atom, then pairs back-references to the newest
// node. A verifier that builds a result before it applies the step's rule
// holds every one of them before it finds that a quote's result must be
// its body.
func NestedResult(pairs int, budget uint64) []byte {
	return witnessOf(budget, 1, nested(pairs))
}

// NestedResultClaimingBudget is NestedResult with a statement that claims
// the whole budget as reductions and as calls, so that a witness of up
// to MaxStepBytes per call fits: only the rule of the first result can
// refuse it.
func NestedResultClaimingBudget(pairs int, budget uint64) []byte {
	return witnessOf(budget, budget, nested(pairs))
}

func nested(pairs int) func([]byte) []byte {
	return func(b []byte) []byte {
		b = append(b, strings.Repeat("\x01", pairs)...)
		b = append(b, 0x00, 0x05) // a new atom, 5
		return append(b, strings.Repeat("\x02", pairs)...)
	}
}

// PendingStack is the variant that never finishes a definition: pairs
// pair marks and nothing else, so that everything stays pending. Its
// statement claims the whole budget as reductions and as calls.
func PendingStack(pairs int, budget uint64) []byte {
	return witnessOf(budget, budget, func(b []byte) []byte {
		return append(b, strings.Repeat("\x01", pairs)...)
	})
}

// witnessOf writes the statement of QuoteProgram under budget (no inputs,
// output 0) claiming claim reductions and calls (the honest figure is
// one), following docs/certificate.md, and then what add writes as the
// first call's result. The bytes are written here, not by noxrunner/cert,
// so that cert's own tests can use them.
func witnessOf(budget, claim uint64, add func([]byte) []byte) []byte {
	p, err := noun.Parse(QuoteProgram)
	if err != nil {
		panic(err)
	}
	st := statement{program: noun.AppendTokens(nil, p), outputs: []uint64{0}, reductions: claim, budget: budget, calls: claim}
	return add(st.append(nil))
}

// Compress packs raw as a certificate artifact (one zstd frame that
// declares its size) at zstd's better level, which is what makes the
// nested-result attack about 1.1 KB.
func Compress(raw []byte) []byte {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
		zstd.WithSingleSegment(true), zstd.WithEncoderCRC(true))
	if err != nil {
		panic(err)
	}
	return e.EncodeAll(raw, nil)
}

// The deep-formula attack. D(n, x), with subject [D [n x]], wraps x in
// Wrap levels of [15 …] when n is 0, and otherwise is D(n-1, D(n-1, x)):
// 2^n leaves within a recursion depth of about 4n, so that a program of
// a few hundred nodes builds Wrap·2^n levels. The admission's depth bound
// (128) covers the program only, never what it builds.
const (
	// Wrap is how many levels one leaf adds.
	Wrap = 33
	// Doublings makes the full attack: 33 · 2^18 = 8,650,752 levels.
	Doublings = 18
)

// deepFormula is D as a formula.
func deepFormula() string {
	leaf := "[0 7]"
	for range Wrap {
		leaf = "[3 [[1 15] " + leaf + "]]"
	}
	// D(n-1, y) for the formula y of the inner value.
	call := func(y string) string {
		return "[2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] " + y + "]]]] [0 2]]]"
	}
	return "[4 [[9 [[0 6] [1 0]]] [" + leaf + " " + call(call("[0 7]")) + "]]]"
}

// DeepBuilder is a formula that, on the subject of one input n, evaluates
// to Wrap·2^n levels of [15 …] around [1 0], a formula of depth as large.
func DeepBuilder() string {
	d := deepFormula()
	return "[2 [[3 [[1 " + d + "] [3 [[0 2] [1 [1 0]]]]]] [1 " + d + "]]]"
}

// DeepCompose builds the deep formula (input n: Wrap·2^n levels) and
// composes into it: running it needs the formula's static bound, then
// descends one level per pattern until the depth limit (1000) makes the
// run Malformed.
func DeepCompose() string { return "[2 [[1 0] " + DeepBuilder() + "]]" }

// DeepBranch builds the deep formula and composes into [8 [4 [[1 0] [[1
// 7] DEEP]]]]: the inverse's operand is a reserved child, so the run needs
// the static bound of the branch and with it the deep arm's, but the
// branch takes the other arm, so the run succeeds (the inverse of 7,
// 2635249152773512046) and can be certified: the certificate defines the
// deep formula node by node, and its verifier needs the same bound.
func DeepBranch() string {
	return "[2 [[1 0] [3 [[1 8] [3 [[1 4] [3 [[1 [1 0]] [3 [[1 [1 7]] " + DeepBuilder() + "]]]]]]]]]]"
}

// DeepBranchResult is what DeepBranch returns: the field inverse of 7.
const DeepBranchResult = 2635249152773512046

// Levels is how deep the formula of n doublings is.
func Levels(n int) int { return Wrap << n }

// Describe names an attack size in messages.
func Describe(n int) string { return fmt.Sprintf("%d levels (%d·2^%d)", Levels(n), Wrap, n) }
