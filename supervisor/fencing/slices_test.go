package fencing

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/reduce"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// doubled is a formula that builds, at run time, the formula F_k with
// F_0 = leaf and F_{j+1} = [op [F_j F_j]] (shared, so a few pairs), then
// runs it on 0: 2^(k+1)-1 reduce calls at a depth of about k. With op 5
// (add) and leaf [1 1] it computes the atom 2^k without building a pair;
// with op 3 (cons) it builds 2^k-1 pairs.
func doubled(op, k int, leaf string) string {
	d := fmt.Sprintf("[3 [[1 %d] [3 [[0 1] [0 1]]]]]", op) // F -> [op [F F]]
	g := d
	for range k - 1 {
		g = "[2 [" + g + " [1 " + d + "]]]"
	}
	build := "[2 [[1 " + leaf + "] [1 " + g + "]]]" // F_k
	return "[2 [[1 0] " + build + "]]"
}

// callOn runs the act on what formula x computes: [2 [x [1 call]]].
func callOn(x string, tag uint64) string {
	return fmt.Sprintf("[2 [%s [1 [16 [[1 %d] [1 0]]]]]]", x, tag)
}

// referenceSteps runs a program in a plain machine whose calls all
// answer their argument (as the host act does): the steps the whole run
// takes, the charge an invocation of it must end with.
func referenceSteps(t *testing.T, src string, inputs []uint64) uint64 {
	t.Helper()
	m := reduce.New(reduce.Config{Provider: echo{}})
	out, err := m.Reduce(context.Background(), noun.Subject(inputs), parse(t, src), 1<<30)
	if err != nil || out.Status != reduce.OK {
		t.Fatalf("reference run: %v %+v", err, out)
	}
	return m.Stats().Steps
}

type echo struct{}

func (echo) Admit(uint64) error                                   { return nil }
func (echo) Look([4]uint64, uint64, uint64) (uint64, bool, error) { return 0, false, nil }
func (echo) Call(_ uint64, o noun.Noun) (noun.Noun, bool, error)  { return o, true, nil }

// TestLongRunBetweenActs: a program that runs over 10^6 steps before its
// act and as many after it takes one slice to the act and one to its
// end (one reservation each), and is charged exactly the steps of its
// run: the replayed prefix of the second slice is not charged again.
func TestLongRunBetweenActs(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.bind()
	long := doubled(5, 19, "[1 1]") // 2^20-1 steps, no pairs
	src := "[3 [" + callOn(long, tagHost) + " " + long + "]]"
	want := referenceSteps(t, src, []uint64{3})
	if want < 2_000_000 {
		t.Fatalf("the program takes %d steps", want)
	}
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: 4 << 20})
	h.must(err)
	inv := h.invoke(p, 3)
	before := h.e.stats.slices.Load()
	got := h.drive(inv)
	if got.Status != store.InvocationCompleted || got.Ordinal != 1 {
		t.Fatalf("%s %v ordinal %d", got.Status, got.Error, got.Ordinal)
	}
	if n := h.e.stats.slices.Load() - before; n != 2 {
		t.Fatalf("%d slices, want 2 (one to the act, one to the end)", n)
	}
	if got.Charged != want || got.Held != 0 {
		t.Fatalf("charged %d held %d, want exactly the run's %d steps", got.Charged, got.Held, want)
	}
	if got.Output[0] != 1<<19 || got.Output[1] != 1<<19 {
		t.Fatalf("output %v", got.Output)
	}
	// A capped engine takes many slices for the same run and charges the
	// same: how slices are cut never changes the charge.
	h.reservation = 300_000
	h.e = h.engine("boot-capped")
	h.bind()
	inv = h.invoke(p, 3)
	before = h.e.stats.slices.Load()
	got = h.drive(inv)
	if got.Status != store.InvocationCompleted || got.Charged != want {
		t.Fatalf("capped: %s %v charged %d, want %d", got.Status, got.Error, got.Charged, want)
	}
	if n := h.e.stats.slices.Load() - before; n < 8 {
		t.Fatalf("capped: %d slices", n)
	}
}

// TestCrashInLongSlice: the process dies (its store closed under it)
// while a long slice runs: its reservation of all the remaining steps
// stays open, the next boot charges it what a replay of the slice takes
// before anything else, and the invocation goes on to its act, called
// once, and its end, charged the run's steps (not the limit).
func TestCrashInLongSlice(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost)
	h.bind()
	// 2^23 steps: a few tenths of a second, long enough to crash in.
	src := callOn(doubled(5, 22, "[1 1]"), tagHost)
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: 1 << 24})
	h.must(err)
	inv := h.invoke(p, 1)
	done := make(chan error, 1)
	go func() { _, err := h.e.Drive(ctx, inv.ID); done <- err }()
	deadline := time.Now().Add(time.Minute)
	for h.e.stats.running.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slice never ran")
		}
		time.Sleep(100 * time.Microsecond)
	}
	h.must(h.st.Close()) // the crash: nothing after the reservation reaches the store
	if err := <-done; err == nil {
		t.Fatal("the slice settled in a closed store")
	}
	h.open()
	h.bind()
	v := h.view(inv.ID)
	if v.Reservation == nil || v.Held != v.Limit || v.Charged != 0 {
		t.Fatalf("after the crash: charged %d held %d", v.Charged, v.Held)
	}
	got := h.drive(inv)
	if got.Status != store.InvocationCompleted || got.Charged < 1<<23 || got.Charged >= got.Limit || got.Held != 0 {
		t.Fatalf("%s %v charged %d held %d", got.Status, got.Error, got.Charged, got.Held)
	}
	if n := h.host.Load(); n != 1 {
		t.Fatalf("host ran %d times", n)
	}
}

// TestRunMemoryIsBounded: a program that builds pairs without end stops
// at MaxCells with memory_exhausted, having allocated about that much;
// witnesses count against the same bound.
func TestRunMemoryIsBounded(t *testing.T) {
	h := newHarness(t)
	e, err := New(Config{Store: h.st.Fencing(), Trust: h.st.Trust(), Vault: h.e.vault, Acts: h.acts, Boot: "small", MaxCells: 1 << 16})
	h.must(err)
	h.e = e
	h.grant(tagCount)
	h.bind()
	// 2^24 pairs (1.3 GB of cells) if nothing stopped it.
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, doubled(3, 24, "[1 0]")), StepLimit: 1 << 26})
	h.must(err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := h.drive(h.invoke(p))
	runtime.ReadMemStats(&after)
	if got.Status != store.InvocationFailed || got.Error.Code != protocol.CodeMemoryExhausted {
		t.Fatalf("%s %v", got.Status, got.Error)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
		t.Fatalf("the run allocated %d MiB under a bound of 2^16 pairs", grew>>20)
	}
	// A witness of 2^17 pairs does not fit either: the run that would
	// take it back fails before decoding it.
	big := parse(t, doubled(3, 17, "[1 0]"))
	m := reduce.New(reduce.Config{})
	out, err := m.Reduce(ctx, noun.Zero, big, 1<<30)
	h.must(err)
	h.count.value = &out.Result
	p2 := h.install(callOnInput(tagCount), tagCount)
	got = h.drive(h.invoke(p2, 1))
	if got.Status != store.InvocationFailed || got.Error.Code != protocol.CodeMemoryExhausted {
		t.Fatalf("a witness over the bound: %s %v", got.Status, got.Error)
	}
	wantCalls(t, "a witness over the bound", h.count, 1)
}

// TestRunDepthIsBounded: a program that recurses without end stops at
// the depth limit (nox's Malformed), not on the Go stack.
func TestRunDepthIsBounded(t *testing.T) {
	h := newHarness(t)
	h.grant()
	h.bind()
	// [2 [[0 1] [0 1]]] on itself: compose runs the subject as formula on
	// the subject, forever.
	self := "[2 [[0 1] [0 1]]]"
	src := "[2 [[1 " + self + "] [1 " + self + "]]]"
	p := h.install(src)
	got := h.drive(h.invoke(p))
	if got.Status != store.InvocationFailed || got.Error.Code != protocol.CodeExecutionFailed ||
		!strings.Contains(got.Error.Message, "Malformed") {
		t.Fatalf("%s %v", got.Status, got.Error)
	}
	if got.Charged > 4*DepthLimit {
		t.Fatalf("charged %d steps for %d levels", got.Charged, DepthLimit)
	}
}

// TestRunsAreBounded: however many invocations are driven at once, at
// most MaxRuns runs are in the VM together.
func TestRunsAreBounded(t *testing.T) {
	h := newHarness(t)
	e, err := New(Config{Store: h.st.Fencing(), Trust: h.st.Trust(), Vault: h.e.vault, Acts: h.acts, Boot: "two", MaxRuns: 2})
	h.must(err)
	h.e = e
	h.grant(tagHost)
	h.bind()
	// 2^20 steps before and after the act: runs that overlap unless held
	// apart.
	src := callOn(doubled(5, 19, "[1 1]"), tagHost)
	p, _, err := h.e.InstallProg(ctx, ProgSpec{Program: parse(t, src), Acts: []uint64{tagHost}, StepLimit: 1 << 22})
	h.must(err)
	var wg sync.WaitGroup
	for i := range 8 {
		inv := h.invoke(p, uint64(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := h.e.Drive(ctx, inv.ID); err != nil || got.Status != store.InvocationCompleted {
				t.Errorf("drive: %v %v", err, got)
			}
		}()
	}
	wg.Wait()
	if peak := h.e.stats.peak.Load(); peak > 2 || peak < 1 {
		t.Fatalf("%d runs at once, at most 2", peak)
	}
	if n := h.e.stats.slices.Load(); n < 16 {
		t.Fatalf("%d slices for 8 invocations of one act", n)
	}
	if n := h.host.Load(); n != 8 {
		t.Fatalf("host ran %d times", n)
	}
}
