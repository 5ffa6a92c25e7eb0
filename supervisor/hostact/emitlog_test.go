package hostact

import (
	"context"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

func opID(i int) string { return fmt.Sprintf("%064x", i) }

// hashOf is the index's hash of op.
func hashOf(x *opIndex, op string) uint64 { return maphash.String(x.seed, op) }

// TestEmitNeverWritesAnOperationTwice: the log refuses to append an
// operation it holds — written by this emitter, or found in the file
// when it was opened (another process's line, a line a restored store
// forgot) — and answers unknown naming the line, so that the attempt is
// reconciled instead of run again. Other operations go on being
// written. Before this, emit appended whatever it was called with.
func TestEmitNeverWritesAnOperationTwice(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	em, err := OpenEmitter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if r := em.Emit(ctx, Call{Operation: opID(i), Attempt: 1, Argument: noun.Atom(uint64(i))}); !r.IsValue() || r.Value().Value() != uint64(i+1) {
			t.Fatalf("emit %d: %+v", i, r)
		}
	}
	again := em.Emit(ctx, Call{Operation: opID(41), Attempt: 1, Argument: noun.Atom(41)})
	if !again.IsUnknown() || !strings.Contains(again.Message(), "line 42") {
		t.Fatalf("a second emit of an operation: %+v", again)
	}
	if n, ok := em.Holds(opID(41)); !ok || n != 42 {
		t.Fatalf("holds: %d %v", n, ok)
	}
	if _, ok := em.Holds(opID(1000)); ok {
		t.Fatal("holds an operation never written")
	}
	em.Close()

	// A long argument: the ids are read from the line's first bytes.
	em, err = OpenEmitter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	big := noun.Atom(7)
	for range 3000 {
		big = noun.Cons(noun.Atom(123456789), big)
	}
	if r := em.Emit(ctx, Call{Operation: opID(100), Attempt: 2, Argument: big}); !r.IsValue() || r.Value().Value() != 101 {
		t.Fatalf("emit after reopening: %+v", r)
	}
	for _, i := range []int{0, 57, 99, 100} {
		if r := em.Emit(ctx, Call{Operation: opID(i), Attempt: 1, Argument: noun.Atom(0)}); !r.IsUnknown() {
			t.Fatalf("operation %d written again after reopening: %+v", i, r)
		}
	}
	em.Close()
	em, err = OpenEmitter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if last, ok := em.Last(); !ok || last.Operation != opID(100) || last.Attempt != 2 {
		t.Fatalf("last line: %+v %v", last, ok)
	}
	if r := em.Emit(ctx, Call{Operation: opID(100), Attempt: 1, Argument: noun.Atom(0)}); !r.IsUnknown() {
		t.Fatalf("the long line's operation written again: %+v", r)
	}
	lines, err := ReadEmitLog(filepath.Join(dir, EmitFile))
	if err != nil || len(lines) != 101 {
		t.Fatalf("%d lines, %v", len(lines), err)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.Operation] {
			t.Fatalf("operation %s twice", l.Operation)
		}
		seen[l.Operation] = true
	}
}

// TestEmitIndexCollisions: operations whose index hashes collide are
// still told apart (the line is read back), and one that collides with
// a written one is written.
func TestEmitIndexCollisions(t *testing.T) {
	dir := t.TempDir()
	em, err := OpenEmitter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	ctx := context.Background()
	if r := em.Emit(ctx, Call{Operation: opID(1), Attempt: 1, Argument: noun.Atom(1)}); !r.IsValue() {
		t.Fatal(r)
	}
	// Force a collision: the index maps another operation's hash to
	// line 1.
	em.index.lines[hashOf(&em.index, opID(2))] = 1
	if _, ok := em.Holds(opID(2)); ok {
		t.Fatal("a colliding operation reads as held")
	}
	if r := em.Emit(ctx, Call{Operation: opID(2), Attempt: 1, Argument: noun.Atom(2)}); !r.IsValue() || r.Value().Value() != 2 {
		t.Fatalf("a colliding operation: %+v", r)
	}
	if n, ok := em.Holds(opID(2)); !ok || n != 2 {
		t.Fatalf("the spilled operation: %d %v", n, ok)
	}
	if r := em.Emit(ctx, Call{Operation: opID(2), Attempt: 1, Argument: noun.Atom(2)}); !r.IsUnknown() {
		t.Fatalf("the spilled operation written twice: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, EmitFile)); err != nil {
		t.Fatal(err)
	}
}
