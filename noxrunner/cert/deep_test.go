package cert

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"runtime/debug"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

// TestDeepNounsProperty sends nouns a million to ten million levels deep
// (a tenth of that under -race, scale_test.go), of random shapes and
// atoms, through every public function that walks a noun or a formula —
// print, parse, tokens (encode, decode, check), measure, atoms, particle, equality, the static
// bound, evaluation by random programs, certificate proving and
// verification — with the goroutine stack capped so that a walk that
// recursed once per level would overflow it (fatal: the test binary
// dies). Every call must return, with a result or a clean error.
func TestDeepNounsProperty(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(deepMaxStack))
	defer withRapidChecks(t, deepChecks)()
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		depth := rapid.IntRange(deepMin, deepMax).Draw(rt, "depth")
		shape := rapid.SampledFrom(deepShapes).Draw(rt, "shape")
		seed := rapid.Uint64().Draw(rt, "seed")
		n := shape.build(depth, seed)

		// Tokens and text round trips, compared as tokens (no hashing).
		tokens := noun.AppendTokens(nil, n)
		back, used, err := noun.DecodeTokens(tokens, 2*depth+2, depth+1)
		if err != nil || used != len(tokens) || !bytes.Equal(noun.AppendTokens(nil, back), tokens) {
			rt.Fatalf("tokens: %v", err)
		}
		if _, _, err := noun.DecodeTokens(tokens, 2*depth+2, depth-1); !errors.Is(err, noun.ErrTokens) {
			rt.Fatalf("tokens under a depth bound: %v", err)
		}
		if used, err := noun.CheckTokens(tokens, 2*depth+2, depth+1); err != nil || used != len(tokens) {
			rt.Fatalf("check tokens: %d %v", used, err)
		}
		text, err := noun.AppendText(nil, n, 64*depth)
		if err != nil {
			rt.Fatal(err)
		}
		if cut, err := noun.AppendText(nil, n, 1<<10); !errors.Is(err, noun.ErrTooLarge) || len(cut) != 1<<10 {
			rt.Fatalf("bounded print: %d bytes, %v", len(cut), err)
		}
		_ = n.String() // cut at 1 MiB
		parsed, err := noun.ParseWith(string(text), noun.ParseOptions{MaxNesting: depth + 1})
		if err != nil || !bytes.Equal(noun.AppendTokens(nil, parsed), tokens) {
			rt.Fatalf("parse: %v", err)
		}
		if _, err := noun.Parse(string(text)); !errors.Is(err, noun.ErrSyntax) {
			rt.Fatalf("parse past the default nesting: %v", err)
		}
		if s, err := noun.Measure(n, 2*depth+2, depth+1); err != nil || s.Depth != depth {
			rt.Fatalf("measure: %+v %v", s, err)
		}
		if _, err := noun.AppendAtoms(nil, n, depth+2); err != nil {
			rt.Fatal(err)
		}

		// The static bound, and evaluation: the deep noun as the subject
		// of random programs, as the formula, and composed into.
		reduce.Bound(n)
		for i := range 8 {
			f := deepProgram(rt, strconv.Itoa(i), n, false)
			budget := rapid.Uint64Range(1, 1<<40).Draw(rt, "budget"+strconv.Itoa(i))
			if _, err := reduce.New(reduce.Config{}).Reduce(ctx, n, f, budget); err != nil {
				rt.Fatalf("eval %s: %v", f, err)
			}
		}

		// Digests cost a permutation a node: they get the smaller noun.
		// A new top cell over the same children is equal (one fresh
		// digest); another head is not.
		d := shape.build(deepDigested, seed)
		p := d.Particle()
		if d.Particle() != p || !noun.Equal(d, noun.Cons(d.Head(), d.Tail())) ||
			noun.Equal(d, noun.Cons(noun.Cons(d.Head(), d.Head()), d.Tail())) {
			rt.Fatal("equal nouns differ, or different ones are equal")
		}
		for i := range 4 {
			f := deepProgram(rt, "d"+strconv.Itoa(i), d, true)
			if _, err := reduce.New(reduce.Config{}).Reduce(ctx, d, f, 1<<40); err != nil {
				rt.Fatalf("eval %s: %v", f, err)
			}
		}
	})

	// Certificates: a program cannot contain a deep noun (admission
	// bounds its depth by 128), so it builds one and runs a random
	// formula on it; the certificate discloses the deep noun node by
	// node and its verifier walks it.
	rapid.Check(t, func(rt *rapid.T) {
		doublings := rapid.IntRange(deepDoublings-1, deepDoublings).Draw(rt, "doublings")
		// [2 [BUILDER [1 f]]]: the object is the deep noun, f runs on it.
		f := deepProgram(rt, "f", noun.Zero, false)
		prog, err := noun.Parse("[2 [" + hostile.DeepBuilder() + " [1 " + f.String() + "]]]")
		if err != nil {
			rt.Fatal(err)
		}
		budget := uint64(1 << 40)
		inputs := []uint64{uint64(doublings)}
		run, err := Prove(ctx, prog, inputs, budget, ProveOptions{})
		if err != nil {
			if !errors.Is(err, ErrNotProvable) {
				rt.Fatalf("prove: %v", err)
			}
			return
		}
		if _, _, err := Verify(ctx, run.Certificate, expectOf(&run.Statement), Bounds{}); err != nil {
			rt.Fatalf("verify: %v", err)
		}
	})
}

// withRapidChecks sets rapid's number of checks for one test.
func withRapidChecks(t *testing.T, n int) func() {
	old := flag.Lookup("rapid.checks").Value.String()
	if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	return func() { flag.Set("rapid.checks", old) }
}

// deepShape builds a noun depth levels deep from a seed.
type deepShape struct {
	name  string
	build func(depth int, seed uint64) noun.Noun
}

func (s deepShape) String() string { return s.name }

// atoms is a cheap stream of small atoms (xorshift): below 256, where
// hemera remembers atom digests, so that a digest costs one permutation
// per pair and the text stays short.
func atoms(seed uint64) func() noun.Noun {
	x := seed | 1
	return func() noun.Noun {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return noun.Atom(x % 256)
	}
}

var deepShapes = []deepShape{
	{"right list", func(depth int, seed uint64) noun.Noun {
		next := atoms(seed)
		n := next()
		for range depth {
			n = noun.Cons(next(), n)
		}
		return n
	}},
	{"left list", func(depth int, seed uint64) noun.Noun {
		next := atoms(seed)
		n := next()
		for range depth {
			n = noun.Cons(n, next())
		}
		return n
	}},
	{"zigzag", func(depth int, seed uint64) noun.Noun {
		next := atoms(seed)
		n := next()
		for i := range depth {
			if i%2 == 0 {
				n = noun.Cons(n, next())
			} else {
				n = noun.Cons(next(), n)
			}
		}
		return n
	}},
	{"formula chain", func(depth int, seed uint64) noun.Noun {
		// [t [t … [1 x]]] with unary tags t from {8, 13, 15}: a formula
		// whose static bound and evaluation both walk every level.
		next := atoms(seed)
		n := noun.Cons(noun.Atom(reduce.TagQuote), next())
		tags := []uint64{reduce.TagInv, reduce.TagNot, reduce.TagHash}
		for i := range depth - 1 {
			n = noun.Cons(noun.Atom(tags[(seed>>(i%61))%3]), n)
		}
		return n
	}},
}

// deepProgram draws a small formula that does something to its subject
// (the deep noun d): walks it, conses it, branches on it, evaluates it as
// a formula or composes into it, and with digests set also compares and
// hashes it. Some are malformed on purpose.
func deepProgram(rt *rapid.T, label string, d noun.Noun, digests bool) noun.Noun {
	axis := func(name string) noun.Noun {
		return noun.Cons(noun.Atom(reduce.TagAxis), noun.Atom(rapid.Uint64Range(1, 1<<20).Draw(rt, label+name)))
	}
	cons := func(a, b noun.Noun) noun.Noun { return noun.Cons(a, b) }
	at := noun.Atom
	quoteD := cons(at(reduce.TagQuote), d)
	forms := []noun.Noun{
		axis("axis"),
		cons(at(reduce.TagCons), cons(axis("l"), axis("r"))),
		cons(at(reduce.TagCompose), cons(cons(at(reduce.TagAxis), at(1)), cons(at(reduce.TagAxis), at(1)))), // the subject as formula
		cons(at(reduce.TagCompose), cons(axis("o"), quoteD)),                                                // d as formula, quoted
		cons(at(reduce.TagBranch), cons(cons(at(reduce.TagQuote), at(0)), cons(quoteD, axis("n")))),
		cons(at(reduce.TagInv), d), // d as a reserved child: its static bound
		cons(at(reduce.TagAdd), cons(axis("a"), axis("b"))),
		d, // d itself as the formula
	}
	if digests {
		forms = append(forms,
			cons(at(reduce.TagHash), cons(at(reduce.TagAxis), at(1))),
			cons(at(reduce.TagAxis), at(0)),
			cons(at(reduce.TagEq), cons(cons(at(reduce.TagAxis), at(1)), quoteD)),
			cons(at(reduce.TagEq), cons(axis("e"), cons(at(reduce.TagAxis), at(1)))),
		)
	}
	return rapid.SampledFrom(forms).Draw(rt, label)
}
