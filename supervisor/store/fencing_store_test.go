package store

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
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
		f.must(f.s.Fencing().View(context.Background(), func(tx FencingTx) (err error) {
			n, err = tx.LiveInvocations(p.ID)
			return err
		}))
		return n
	}
	if n := live(); n != 1 {
		t.Fatalf("%d live invocations, want 1", n)
	}
	f.must(f.s.Fencing().Update(context.Background(), func(tx FencingTx) error {
		cur, err := tx.Invocation(inv.ID)
		if err != nil {
			return err
		}
		cur.Status, cur.Error = InvocationCancelled, protocol.Errorf(protocol.CodeCancelled, "test")
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
		f.must(f.s.Fencing().View(context.Background(), func(tx FencingTx) (err error) {
			ok, err = tx.InvocationFenced(seq)
			return err
		}))
		return ok
	}
	if fenced(inv.Seq) {
		t.Fatal("an invocation of a store never restored is fenced")
	}
	f.must(f.s.Local().Update(context.Background(), func(tx LocalTx) error {
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		m.Fence = &RestoreFence{At: f.now, Restores: 1, Invocations: inv.Seq, Reason: "test"}
		return tx.PutMeta(m)
	}))
	if !fenced(inv.Seq) || fenced(inv.Seq+1) {
		t.Fatalf("fence at seq %d: seq %d fenced %v, seq %d fenced %v", inv.Seq, inv.Seq, fenced(inv.Seq), inv.Seq+1, fenced(inv.Seq+1))
	}
}

// The fencing store checks signed records against the one key it
// trusts: none is ErrUntrusted, another key's signature ErrTampered.
func TestFencingTrust(t *testing.T) {
	s, err := OpenBolt(t.TempDir(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fs := s.Fencing()
	key, err := neuron.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := neuron.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	claim := func(k *neuron.Key) *Claim {
		c := &Claim{Operation: "op", Attempt: 1, Generation: 1, Worker: *worker("b1"), Created: time.Unix(5, 0).UTC()}
		sig, err := k.Sign(c.Statement())
		if err != nil {
			t.Fatal(err)
		}
		c.Signature = sig
		return c
	}
	if err := fs.Preverify(claim(key)); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("before a key is trusted: %v", err)
	}
	if err := fs.Trust(key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	if err := fs.Trust(other.PublicKey()); !errors.Is(err, ErrTrustSet) {
		t.Fatalf("another key: %v", err)
	}
	if err := fs.Preverify(claim(key)); err != nil {
		t.Fatalf("the trusted key's claim: %v", err)
	}
	if err := fs.Preverify(claim(other)); !errors.Is(err, ErrTampered) {
		t.Fatalf("another key's claim: %v", err)
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
	for _, it := range []reflect.Type{reflect.TypeFor[Fencing](), reflect.TypeFor[FencingTx]()} {
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
