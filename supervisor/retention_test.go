package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestGC: retention removes ended jobs (and their sandboxes) past the
// cutoff, never a live or an unknown one, and what is removed can never
// be submitted again, with its payload or another.
func TestGC(t *testing.T) {
	home := t.TempDir()
	s, _ := openStub(t, home, nil)
	ctx := context.Background()
	submit := func(id string) {
		if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, id, protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil)}); err != nil {
			t.Fatal(err)
		}
	}
	submit("acc")
	endStub(t, s, nil, "")
	submit("fail")
	endStub(t, s, protocol.Errorf(protocol.CodeBudgetExhausted, "x"), lifecycle.Failed)
	submit("queued")
	// An unknown job, as a restart leaves it: written through the store.
	submit("unk")
	if err := s.store.Update(ctx, func(tx store.Tx) error {
		j, err := tx.Job("unk")
		if err != nil {
			return err
		}
		j.State = lifecycle.Unknown
		if err := tx.Dequeue("unk"); err != nil {
			return err
		}
		return tx.PutJob(j)
	}); err != nil {
		t.Fatal(err)
	}
	// A sandbox of the accepted job, as a kept certificate would be.
	d, err := s.sandboxes.Create("acc", 1)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()

	// Nothing ended an hour ago.
	rep, err := s.GC(ctx, GCRequest{OlderThan: time.Hour})
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("gc older than 1h: %+v %v", rep, err)
	}
	rep, err = s.GC(ctx, GCRequest{State: lifecycle.Failed})
	if err != nil || len(rep.Removed) != 1 || rep.Removed[0].ID != "fail" {
		t.Fatalf("gc of failed jobs: %+v %v", rep, err)
	}
	rep, err = s.GC(ctx, GCRequest{})
	if err != nil || len(rep.Removed) != 1 || rep.Removed[0].ID != "acc" || rep.Removed[0].State != lifecycle.Accepted {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	for _, bad := range []lifecycle.State{lifecycle.Unknown, lifecycle.Queued, "nonsense"} {
		if _, err := s.GC(ctx, GCRequest{State: bad}); !errors.Is(err, ErrConfig) {
			t.Errorf("gc of %s jobs: %v", bad, err)
		}
	}
	if _, err := os.Stat(filepath.Join(SandboxDir(home), "acc")); !os.IsNotExist(err) {
		t.Errorf("the removed job's sandbox is still there: %v", err)
	}
	for _, id := range []string{"acc", "fail"} {
		// Unknown, saying why: status, events and cancel alike.
		if _, err := s.Status(ctx, id); !errors.Is(err, ErrUnknownJob) || !strings.Contains(err.Error(), "removed by retention") {
			t.Errorf("%s after gc: %v", id, err)
		}
		if _, err := s.Events(ctx, id); !errors.Is(err, ErrUnknownJob) || !strings.Contains(err.Error(), "removed by retention") {
			t.Errorf("events of %s after gc: %v", id, err)
		}
		if _, err := s.Cancel(ctx, id, ""); !errors.Is(err, ErrUnknownJob) || !strings.Contains(err.Error(), "removed by retention") {
			t.Errorf("cancel of %s after gc: %v", id, err)
		}
	}
	if _, err := s.Status(ctx, "never"); !errors.Is(err, ErrUnknownJob) || strings.Contains(err.Error(), "removed") {
		t.Errorf("a job that never was: %v", err)
	}
	for _, id := range []string{"queued", "unk"} {
		if _, err := s.Status(ctx, id); err != nil {
			t.Errorf("%s was removed: %v", id, err)
		}
	}
	// The same payload again: refused, saying why; another payload too.
	_, _, err = s.Submit(ctx, SubmitRequest{Spec: spec(t, "acc", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil)})
	if protocol.CodeOf(err) != protocol.CodeInvalidJob || !strings.Contains(err.Error(), "removed by retention") {
		t.Errorf("resubmission of a removed job: %v", err)
	}
	_, _, err = s.Submit(ctx, SubmitRequest{Spec: spec(t, "acc", protocol.OpExecute, add2, []uint64{4, 5}, protocol.Limits{}, nil)})
	if protocol.CodeOf(err) != protocol.CodeInvalidJob || !strings.Contains(err.Error(), "another payload") {
		t.Errorf("a removed id with another payload: %v", err)
	}
}

// serve --retain: the retention loop removes what ended, from the start
// of the boot on.
func TestRetainLoop(t *testing.T) {
	home := t.TempDir()
	s, _ := openStub(t, home, nil)
	ctx := context.Background()
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "old", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil)}); err != nil {
		t.Fatal(err)
	}
	endStub(t, s, nil, "")
	s.Close(ctx)
	s2, logs := openStub(t, home, func(c *Config) { c.Retain = time.Nanosecond })
	s2.Start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s2.Status(ctx, "old")
		if errors.Is(err, ErrUnknownJob) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention did not remove the job: %v\n%s", err, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s2.Close(ctx)
	if !strings.Contains(logs.String(), "retention removed ended jobs") {
		t.Errorf("retention not logged:\n%s", logs)
	}
}

// gc without a daemon: OpenOffline opens the store (no launcher, no
// boot, no recovery) and refuses a home a supervisor owns.
func TestOpenOffline(t *testing.T) {
	home := t.TempDir()
	s, _ := openStub(t, home, nil)
	ctx := context.Background()
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "j", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil)}); err != nil {
		t.Fatal(err)
	}
	endStub(t, s, nil, "")
	if _, err := OpenOffline(ctx, home, nil); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("offline open of an owned home: %v", err)
	}
	s.Close(ctx)
	off, err := OpenOffline(ctx, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	var boots uint64
	off.store.View(ctx, func(tx store.Tx) error { m, _ := tx.Meta(); boots = m.Boots; return nil })
	rep, err := off.GC(ctx, GCRequest{})
	if err != nil || len(rep.Removed) != 1 {
		t.Fatalf("offline gc: %+v %v", rep, err)
	}
	off.Start() // does nothing
	if err := off.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if boots != 1 {
		t.Errorf("an offline open started a boot: %d boots", boots)
	}
}
