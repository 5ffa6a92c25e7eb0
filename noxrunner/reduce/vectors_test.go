package reduce_test

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/vectors"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
)

func particleHex(n noun.Noun) string {
	p := n.Particle()
	return hex.EncodeToString(p[:])
}

// TestReferenceVectors runs every reference case and compares status,
// result, cost, remaining, error kind and code, and all three particles.
func TestReferenceVectors(t *testing.T) {
	cases, err := vectors.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 7892 {
		t.Fatalf("loaded %d cases, want 7892", len(cases))
	}
	perGroup := map[string]int{}
	for _, c := range cases {
		if !checkCase(t, c) {
			continue
		}
		perGroup[c.Group()]++
	}
	t.Logf("passed per group: %v", perGroup)
}

func checkCase(t *testing.T, c vectors.Case) bool {
	t.Helper()
	fail := func(format string, args ...any) bool {
		t.Helper()
		t.Errorf("%s: "+format, append([]any{c.ID}, args...)...)
		return false
	}
	obj, err := noun.Parse(c.Object)
	if err != nil {
		return fail("object: %v", err)
	}
	f, err := noun.Parse(c.Formula)
	if err != nil {
		return fail("formula: %v", err)
	}
	if got := particleHex(obj); got != c.Expect.ObjectParticle {
		return fail("object particle %s, want %s", got, c.Expect.ObjectParticle)
	}
	if got := particleHex(f); got != c.Expect.FormulaParticle {
		return fail("formula particle %s, want %s", got, c.Expect.FormulaParticle)
	}
	m := reduce.New(reduce.Config{})
	out, err := m.Reduce(context.Background(), obj, f, c.Budget)
	if err != nil {
		return fail("aborted: %v", err)
	}
	e := c.Expect
	if out.Status.String() != e.Status {
		return fail("status %s, want %s (%+v)", out.Status, e.Status, out)
	}
	switch out.Status {
	case reduce.OK:
		if got := out.Result.String(); e.Result == nil || got != *e.Result {
			return fail("result %s, want %v", got, deref(e.Result))
		}
		if e.Cost == nil || out.Cost(c.Budget) != *e.Cost {
			return fail("cost %d, want %v", out.Cost(c.Budget), deref(e.Cost))
		}
		if e.Remaining == nil || out.Remaining != *e.Remaining {
			return fail("remaining %d, want %v", out.Remaining, deref(e.Remaining))
		}
		if e.ResultParticle == nil || particleHex(out.Result) != *e.ResultParticle {
			return fail("result particle %s, want %v", particleHex(out.Result), deref(e.ResultParticle))
		}
	case reduce.Halt:
		if e.Remaining == nil || out.Remaining != *e.Remaining {
			return fail("halt remaining %d, want %v", out.Remaining, deref(e.Remaining))
		}
	case reduce.Error:
		if e.Error == nil || out.Kind.String() != *e.Error {
			return fail("error %s, want %v", out.Kind, deref(e.Error))
		}
		if e.ErrorCode == nil || int(out.Kind) != *e.ErrorCode {
			return fail("error code %d, want %v", out.Kind, deref(e.ErrorCode))
		}
	}
	return true
}

func deref[T any](p *T) any {
	if p == nil {
		return "<absent>"
	}
	return *p
}
