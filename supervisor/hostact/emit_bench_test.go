package hostact

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// fillLog writes n lines of distinct operations to the log in dir, as
// Emit writes them, without a sync per line.
func fillLog(b *testing.B, dir string, n int) {
	b.Helper()
	f, err := os.OpenFile(filepath.Join(dir, EmitFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		line, err := json.Marshal(EmitLine{Neuron: fmt.Sprintf("%064x", 1), Prog: fmt.Sprintf("%064x", 2), Invocation: fmt.Sprintf("%064x", i/2),
			Operation: fmt.Sprintf("%064x", 1<<40+i), Attempt: "1", Generation: "3", Argument: fmt.Sprintf("[%d 0]", i)})
		if err != nil {
			b.Fatal(err)
		}
		w.Write(append(line, '\n'))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
}

// BenchmarkEmit is one emit act (the line written and fsynced) on a log
// that holds 10,000 lines already: what the act costs with the check
// that its operation is not in the log.
func BenchmarkEmit(b *testing.B) {
	dir := b.TempDir()
	fillLog(b, dir, 10000)
	em, err := OpenEmitter(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer em.Close()
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		r := em.Emit(ctx, Call{Neuron: fmt.Sprintf("%064x", 1), Prog: fmt.Sprintf("%064x", 2), Invocation: fmt.Sprintf("%064x", i),
			Operation: fmt.Sprintf("%064x", 1<<50+i), Attempt: 1, Generation: 3, Argument: noun.Atom(uint64(i))})
		if !r.IsValue() {
			b.Fatal(r)
		}
	}
}

// BenchmarkEmitterOpen opens a log of 100,000 lines (what a start reads),
// and reports the heap the open emitter holds per line.
func BenchmarkEmitterOpen(b *testing.B) {
	dir := b.TempDir()
	fillLog(b, dir, 100000)
	var before, after runtime.MemStats
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		runtime.ReadMemStats(&before)
		em, err := OpenEmitter(dir)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/100000, "heap-B/line")
		em.Close()
	}
}
