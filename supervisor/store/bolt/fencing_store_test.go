package bolt

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The fencing store's suite is bbolt's (the only driver that keeps
// fencing records): fencing_test.go and its neighbours, with the gaps
// filled here. TestFencingSuiteCallsEveryMethod keeps it whole: a method
// of store.Fencing or store.FencingTx that no test of this package
// calls fails it.

// LiveInvocations counts the invocations of a prog that have not ended.
func TestLiveInvocations(t *testing.T) {
	f := newFx(t)
	p, inv := f.setup()
	live := func() int {
		t.Helper()
		n := -1
		f.must(f.s.Fencing().View(context.Background(), func(tx store.FencingTx) (err error) {
			n, err = tx.LiveInvocations(p.ID)
			return err
		}))
		return n
	}
	if n := live(); n != 1 {
		t.Fatalf("%d live invocations, want 1", n)
	}
	f.must(f.s.Fencing().Update(context.Background(), func(tx store.FencingTx) error {
		cur, err := tx.Invocation(inv.ID)
		if err != nil {
			return err
		}
		cur.Status, cur.Error = store.InvocationCancelled, protocol.Errorf(protocol.CodeCancelled, "test")
		return tx.PutInvocation(cur)
	}))
	if n := live(); n != 0 {
		t.Fatalf("%d live invocations after the only one ended, want 0", n)
	}
}

// InvocationFenced says whether a restore fenced an invocation: every
// seq up to the fence's, none without a fence.
func TestInvocationFenced(t *testing.T) {
	f := newFx(t)
	_, inv := f.setup()
	fenced := func(seq uint64) bool {
		t.Helper()
		var ok bool
		f.must(f.s.Fencing().View(context.Background(), func(tx store.FencingTx) (err error) {
			ok, err = tx.InvocationFenced(seq)
			return err
		}))
		return ok
	}
	if fenced(inv.Seq) {
		t.Fatal("an invocation of a store never restored is fenced")
	}
	f.must(f.s.Local().Update(context.Background(), func(tx store.LocalTx) error {
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		m.Fence = &store.RestoreFence{At: f.now, Restores: 1, Invocations: inv.Seq, Reason: "test"}
		return tx.PutMeta(m)
	}))
	if !fenced(inv.Seq) || fenced(inv.Seq+1) {
		t.Fatalf("fence at seq %d: seq %d fenced %v, seq %d fenced %v", inv.Seq, inv.Seq, fenced(inv.Seq), inv.Seq+1, fenced(inv.Seq+1))
	}
}

// TestFencingSuiteCallsEveryMethod fails when a method of store.Fencing
// or store.FencingTx is called by no test of this package: the calls
// are read from the tests' source (any call of a method of that name).
func TestFencingSuiteCallsEveryMethod(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	called := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					called[sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	var missing []string
	for _, it := range []reflect.Type{reflect.TypeFor[store.Fencing](), reflect.TypeFor[store.FencingTx]()} {
		for i := range it.NumMethod() {
			if m := it.Method(i).Name; !called[m] {
				missing = append(missing, it.Name()+"."+m)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("no test of the fencing store calls %s", strings.Join(missing, ", "))
	}
}
