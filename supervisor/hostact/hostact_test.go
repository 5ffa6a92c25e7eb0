package hostact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	em, err := OpenEmitter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	if err := Builtins(r, em); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("host", 7, Host); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a second host: %v", err)
	}
	if err := r.Register("other", TagEmit, Host); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a second act on emit's tag: %v", err)
	}
	for _, bad := range []string{"", "Emit", "9x", "a b", string(make([]byte, 65))} {
		if err := r.Register(bad, 99, Host); !errors.Is(err, ErrName) {
			t.Fatalf("name %q: %v", bad, err)
		}
	}
	if !slices.Equal(r.Tags(), []uint64{TagEmit, TagHost}) {
		t.Fatalf("tags %x", r.Tags())
	}
	for in, want := range map[string]uint64{"emit": TagEmit, "host": TagHost, "0xAC75000000000006": TagHost, "12426838746798751745": TagEmit, "0x5": 5} {
		got, err := r.Resolve(in)
		if err != nil || got != want {
			t.Fatalf("resolve %q: %#x %v", in, got, err)
		}
	}
	if _, err := r.Resolve("nope"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("an unknown name: %v", err)
	}
	tags, err := r.ResolveList("host, emit,host,")
	if err != nil || !slices.Equal(tags, []uint64{TagEmit, TagHost}) {
		t.Fatalf("list: %x %v", tags, err)
	}
	if r.Name(TagHost) != "host" || r.Name(5) != "0x0000000000000005" {
		t.Fatalf("names %q %q", r.Name(TagHost), r.Name(5))
	}
	a, ok := r.Lookup(TagHost)
	if !ok || !a.Func(context.Background(), Call{Argument: noun.Atom(4)}).IsValue() {
		t.Fatal("host")
	}
}

// TestEmitterCutsATornLine: a last line without its newline (a write a
// crash cut) is removed when the log is opened; whole lines stay.
func TestEmitterCutsATornLine(t *testing.T) {
	dir := t.TempDir()
	em, err := OpenEmitter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r := em.Emit(context.Background(), Call{Operation: fmt.Sprintf("op%d", i), Attempt: 1, Argument: noun.Cons(noun.Atom(uint64(i)), noun.Atom(0))})
		if !r.IsValue() || r.Value().Value() != uint64(i+1) {
			t.Fatalf("emit %d: %+v", i, r)
		}
	}
	em.Close()
	if r := em.Emit(context.Background(), Call{}); !r.IsFailed() {
		t.Fatal("a closed emitter wrote")
	}
	path := filepath.Join(dir, EmitFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"neuron":"x","prog`)
	f.Close()
	em, err = OpenEmitter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	if em.Lines() != 3 || em.Torn == 0 {
		t.Fatalf("lines %d torn %d", em.Lines(), em.Torn)
	}
	lines, err := ReadEmitLog(path)
	if err != nil || len(lines) != 3 || lines[1].Argument != "[1 0]" {
		t.Fatalf("log %+v %v", lines, err)
	}
	if r := em.Emit(context.Background(), Call{Argument: noun.Atom(9)}); r.Value().Value() != 4 {
		t.Fatalf("the next line is %v", r.Value())
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("log mode %v", fi.Mode().Perm())
	}
}

func TestResults(t *testing.T) {
	var zero Result
	if !zero.IsUnknown() || !Unknown("x").IsUnknown() || !Failed("x").IsFailed() || Failed("m").Message() != "m" {
		t.Fatal("result kinds")
	}
}
