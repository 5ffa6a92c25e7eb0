package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// restoreHome is a home driven through stub supervisors: jobs moved by
// endStub, invocations of a prog that emits twice driven by the home's
// own engine (the built-in emit act, emit.jsonl).
type restoreHome struct {
	t    *testing.T
	home string
	s    *Supervisor
	logs *bytes.Buffer
	prog string
}

func newRestoreHome(t *testing.T) *restoreHome {
	h := &restoreHome{t: t, home: t.TempDir()}
	h.open()
	e := h.s.Fencing()
	ctx := context.Background()
	if _, _, err := e.InitNeuron(ctx, "restorenet"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetGrant(ctx, 0, fencing.GrantSpec{Acts: []uint64{hostact.TagEmit}}); err != nil {
		t.Fatal(err)
	}
	h.s.BindBoot(ctx)
	call := fmt.Sprintf("[16 [[1 %d] [1 0]]]", hostact.TagEmit)
	prog, err := noun.Parse("[3 [" + call + " " + call + "]]")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := e.InstallProg(ctx, fencing.ProgSpec{Program: prog, Acts: []uint64{hostact.TagEmit}})
	if err != nil {
		t.Fatal(err)
	}
	h.prog = p.ID
	return h
}

func (h *restoreHome) open() {
	h.t.Helper()
	h.s, h.logs = openStub(h.t, h.home, nil)
}

func (h *restoreHome) close() {
	h.t.Helper()
	if err := h.s.Close(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

func (h *restoreHome) submit(id string) {
	h.t.Helper()
	if _, _, err := h.s.Submit(context.Background(), SubmitRequest{Spec: spec(h.t, id, protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{}, nil)}); err != nil {
		h.t.Fatal(err)
	}
}

// accept takes the next queued job to accepted; with keep, its sandbox
// is left as a kept certificate's would be.
func (h *restoreHome) accept(keep bool) string {
	h.t.Helper()
	id := endStub(h.t, h.s, nil, lifecycle.Accepted)
	if keep {
		st := h.status(id)
		d, err := h.s.sandboxes.Create(id, st.Job.Accepted)
		if err != nil {
			h.t.Fatal(err)
		}
		if _, err := d.Publish("cert.cnxt.zst", strings.NewReader("certificate"), 11); err != nil {
			h.t.Fatal(err)
		}
		d.Close()
	}
	return id
}

func (h *restoreHome) status(id string) *JobStatus {
	h.t.Helper()
	st, err := h.s.Status(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// invoke makes an invocation that waits at its first act.
func (h *restoreHome) invoke() string {
	h.t.Helper()
	e := h.s.Fencing()
	inv, err := e.Invoke(context.Background(), h.prog, []uint64{1})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := e.Advance(context.Background(), inv.ID); err != nil {
		h.t.Fatal(err)
	}
	return inv.ID
}

func (h *restoreHome) drive(id string) (*store.Invocation, error) {
	return h.s.Fencing().Drive(context.Background(), id)
}

// backup writes a backup of the (closed) home's store.
func (h *restoreHome) backup() string {
	h.t.Helper()
	dst := filepath.Join(h.t.TempDir(), "backup.db")
	if _, err := bolt.WriteBackup(dst, func(w io.Writer) (int64, error) { return bolt.BackupFile(StorePath(h.home), w) }); err != nil {
		h.t.Fatal(err)
	}
	return dst
}

// coldCopy copies the (closed) store file as an operator's cp would.
func (h *restoreHome) coldCopy() string {
	h.t.Helper()
	dst := filepath.Join(h.t.TempDir(), "copy.db")
	putFile(h.t, StorePath(h.home), dst)
	return dst
}

func putFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (h *restoreHome) meta() store.Meta {
	h.t.Helper()
	var m store.Meta
	if err := h.s.Store().View(context.Background(), func(tx store.Tx) (err error) { m, err = tx.Meta(); return err }); err != nil {
		h.t.Fatal(err)
	}
	return m
}

func (h *restoreHome) emitLog() []hostact.EmitLine {
	h.t.Helper()
	lines, err := hostact.ReadEmitLog(filepath.Join(hostact.EffectsDir(h.home), hostact.EmitFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.t.Fatal(err)
	}
	return lines
}

// TestRestoreFencesWhatMovedOn: a backup taken while an invocation
// waited at its first act and jobs were queued; after it, the daemon ran
// both acts, accepted jobs (one of them submitted after the backup) and
// ran another invocation; then the backup is put back (with `store
// restore`'s steps, or copied by hand). The start finds the store older
// than its home and fences it: the waiting operation and the one after
// it are unknown until reconciled (emit.jsonl never holds one twice), a
// job whose sandbox shows an attempt the store does not say is accepted
// ends unknown instead of running again, a job the store forgot keeps
// its sandbox and its id is refused, a job that never moved is run, an
// invocation made after the fence is dispatched under an id no earlier
// one had, the store checks clean, and a later start fences nothing
// more. Before this work the restart dispatched the waiting operation
// again (its line twice in emit.jsonl) and ran the accepted job again.
func TestRestoreFencesWhatMovedOn(t *testing.T) {
	for _, how := range []string{"store restore", "cp"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) {
			ctx := context.Background()
			h := newRestoreHome(t)
			h.submit("a")
			h.submit("b")
			h.submit("c")
			if id := h.accept(false); id != "a" {
				t.Fatalf("accepted %s first", id)
			}
			waiting := h.invoke()
			h.close()
			bak := h.backup()

			// After the backup.
			h.open()
			if id := h.accept(true); id != "b" {
				t.Fatalf("accepted %s second", id)
			}
			if v, err := h.drive(waiting); err != nil || v.Status != store.InvocationCompleted {
				t.Fatalf("drive after the backup: %v %v", v, err)
			}
			later := h.invoke()
			if _, err := h.drive(later); err != nil {
				t.Fatal(err)
			}
			h.submit("d")
			h.accept(false) // c
			if id := h.accept(true); id != "d" {
				t.Fatalf("accepted %s fourth", id)
			}
			lines := h.emitLog()
			if len(lines) != 4 {
				t.Fatalf("%d lines before the restore", len(lines))
			}
			h.close()

			if how == "cp" {
				putFile(t, bak, StorePath(h.home))
			} else if _, err := bolt.InstallStore(StoreDir(h.home), bak, func() error { return MarkRestored(h.home, bak) }); err != nil {
				t.Fatal(err)
			}
			h.open()
			m := h.meta()
			if m.Fence == nil || m.Backup != nil || m.Fence.Restores != 1 {
				t.Fatalf("meta after the restored start: fence %+v backup %+v", m.Fence, m.Backup)
			}
			if _, err := os.Stat(RestoreMarkPath(h.home)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the restore mark is left: %v", err)
			}
			if !strings.Contains(h.logs.String(), "older than its home") {
				t.Fatalf("the start did not say it fenced the store:\n%s", h.logs)
			}
			if st := h.status("a"); st.Job.State != lifecycle.Accepted || st.Job.Accepted != 1 {
				t.Fatalf("a: %s", st.Job.State)
			}
			if st := h.status("b"); st.Job.State != lifecycle.Unknown || !strings.Contains(st.Job.Error.Message, "may have been accepted after the backup") {
				t.Fatalf("b (accepted after the backup): %s %v", st.Job.State, st.Job.Error)
			}
			if _, err := os.Stat(filepath.Join(SandboxDir(h.home), "b", "1")); err != nil {
				t.Fatalf("b's sandbox: %v", err)
			}
			if st := h.status("c"); st.Job.State != lifecycle.Queued {
				t.Fatalf("c (queued at the backup, no evidence): %s", st.Job.State)
			}
			if _, err := h.s.Status(ctx, "d"); !errors.Is(err, ErrUnknownJob) || !strings.Contains(err.Error(), "forgotten") {
				t.Fatalf("d (submitted after the backup): %v", err)
			}
			_, _, err := h.s.Submit(ctx, SubmitRequest{Spec: spec(t, "d", protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{}, nil)})
			if pe := protocol.AsError(err); err == nil || pe.Code != protocol.CodeInvalidJob || !strings.Contains(pe.Message, "forgotten when the store was restored") {
				t.Fatalf("d submitted again: %v", err)
			}
			if _, err := os.Stat(filepath.Join(SandboxDir(h.home), "d", "1")); err != nil {
				t.Fatalf("d's sandbox: %v", err)
			}
			// A restart before anything else happened: the evidence the
			// fence answered (the last emit line, the sandboxes) fences
			// nothing more.
			h.close()
			h.open()
			if m := h.meta(); m.Fence == nil || m.Fence.Restores != 1 || strings.Contains(h.logs.String(), "older than its home") {
				t.Fatalf("a restart after the fence fenced again: %+v\n%s", m.Fence, h.logs)
			}
			if id := h.accept(false); id != "c" {
				t.Fatalf("the next job run is %s", id)
			}

			// The waiting invocation: unknown, then reconciled with the
			// lines its acts wrote after the backup.
			lineOf := map[string]uint64{}
			for i, l := range lines {
				lineOf[l.Operation] = uint64(i + 1)
			}
			e := h.s.Fencing()
			for round := 0; ; round++ {
				v, err := h.drive(waiting)
				if err == nil {
					if v.Status != store.InvocationCompleted || len(v.Output) != 2 || v.Output[0] != 1 || v.Output[1] != 2 {
						t.Fatalf("the restored invocation ended %s %v %v", v.Status, v.Output, v.Error)
					}
					break
				}
				r, ok := fencing.AsRefusal(err)
				if !ok || r.Refusal != fencing.UnknownOutcome || round > 2 {
					t.Fatalf("drive of the restored invocation, round %d: %v", round, err)
				}
				view, verr := e.Operation(ctx, r.Operation)
				if verr != nil || view.Attempts[0].Executor != store.ExecutorRestored || view.Attempts[0].Claim != nil {
					t.Fatalf("operation %s: %+v %v", r.Operation, view, verr)
				}
				n, ok := lineOf[r.Operation]
				if !ok {
					t.Fatalf("operation %s is not in emit.jsonl", r.Operation)
				}
				if _, _, err := e.Reconcile(ctx, r.Operation, r.Attempt, fencing.OutcomeSpec{Value: noun.Atom(n)}); err != nil {
					t.Fatal(err)
				}
			}
			// Made after the fence: dispatched, under a new id.
			fresh, err := e.Invoke(ctx, h.prog, []uint64{1})
			if err != nil {
				t.Fatal(err)
			}
			if fresh.ID == later {
				t.Fatal("the new invocation has the id of one the restored store forgot")
			}
			if v, err := h.drive(fresh.ID); err != nil || v.Status != store.InvocationCompleted || v.Output[0] != 5 {
				t.Fatalf("an invocation after the fence: %+v %v", v, err)
			}
			seen := map[string]bool{}
			for _, l := range h.emitLog() {
				if seen[l.Operation] {
					t.Fatalf("operation %s twice in emit.jsonl", l.Operation)
				}
				seen[l.Operation] = true
			}
			if len(seen) != 6 {
				t.Fatalf("emit.jsonl holds %d operations, want 6", len(seen))
			}
			rep, err := h.s.CheckStore(ctx)
			if err != nil || len(rep.Problems) != 0 {
				t.Fatalf("store check: %+v %v", rep, err)
			}
			h.close()

			// A later start: nothing more to fence.
			h.open()
			if m := h.meta(); m.Fence == nil || m.Fence.Restores != 1 {
				t.Fatalf("the next start fenced again: %+v", m.Fence)
			}
			if strings.Contains(h.logs.String(), "older than its home") {
				t.Fatalf("the next start found a restore:\n%s", h.logs)
			}
		})
	}
}

// TestRestoreIsFoundWithoutBeingTold: each sign of a store older than
// its home fences the start on its own: the backup mark in the file, the
// restore mark in the home, the home's high-water mark (a cold copy put
// back by hand after a later daemon start), the emit log's last line
// (the high-water mark gone too), a sandbox of an attempt the store never
// prepared; and a plain restart is no restore.
func TestRestoreIsFoundWithoutBeingTold(t *testing.T) {
	for _, tc := range []struct {
		name string
		// copy takes the copy (the home closed); after runs with the home
		// open, then it is closed and the copy put back by put.
		copy  func(h *restoreHome) string
		after func(h *restoreHome)
		put   func(h *restoreHome, file string)
		want  string // in the fence's reason; "" for no fence
	}{
		{"backup mark", (*restoreHome).backup, nil, nil, "is a backup taken"},
		{"restore mark", (*restoreHome).coldCopy, nil, func(h *restoreHome, f string) {
			if _, err := bolt.InstallStore(StoreDir(h.home), f, func() error { return MarkRestored(h.home, f) }); err != nil {
				h.t.Fatal(err)
			}
		}, "store restore put"},
		{"high-water mark", (*restoreHome).coldCopy, nil, nil, "high-water mark"},
		{"emit log", (*restoreHome).coldCopy, func(h *restoreHome) {
			if _, err := h.drive(h.invoke()); err != nil {
				h.t.Fatal(err)
			}
		}, func(h *restoreHome, f string) {
			os.Remove(HighWaterPath(h.home))
			putFile(h.t, f, StorePath(h.home))
		}, "last line of emit.jsonl"},
		{"sandbox", (*restoreHome).coldCopy, func(h *restoreHome) {
			h.submit("x")
			h.accept(true)
		}, func(h *restoreHome, f string) {
			os.Remove(HighWaterPath(h.home))
			putFile(h.t, f, StorePath(h.home))
		}, "has a sandbox and no record"},
		{"plain restart", func(h *restoreHome) string { return "" }, func(h *restoreHome) {
			h.submit("y")
			h.accept(true)
			if _, err := h.drive(h.invoke()); err != nil {
				h.t.Fatal(err)
			}
		}, func(*restoreHome, string) {}, ""},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			h := newRestoreHome(t)
			h.close()
			file := tc.copy(h)
			h.open()
			if tc.after != nil {
				tc.after(h)
			}
			h.close()
			if tc.put != nil {
				tc.put(h, file)
			} else {
				putFile(t, file, StorePath(h.home))
			}
			h.open()
			m := h.meta()
			switch {
			case tc.want == "" && m.Fence != nil:
				t.Fatalf("a plain restart was fenced: %+v", m.Fence)
			case tc.want != "" && (m.Fence == nil || !strings.Contains(m.Fence.Reason, tc.want)):
				t.Fatalf("fence %+v, want a reason with %q", m.Fence, tc.want)
			}
		})
	}
}
