package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/internal/testenv"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// smallDisk mounts a tmpfs of size bytes: a home whose disk can be filled.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	requireIsolation(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file into dir until the disk is full and returns the
// function that frees the space again.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// What is left is less than a chunk: take that too.
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

func openOnDisk(t *testing.T, home string, logs *testenv.Buffer) *Supervisor {
	t.Helper()
	s, err := Open(context.Background(), Config{Home: home, Slots: 1, Launcher: stubLauncher{},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bigVerifySpec is a job whose frozen spec alone (a 1 MiB artifact) needs
// more store pages than a full disk has: its submission must write new
// pages.
func bigVerifySpec(t *testing.T, id string) []byte {
	return spec(t, id, protocol.OpVerify, add2, []uint64{1, 2}, protocol.Limits{}, func(js *protocol.JobSpec) {
		js.Artifact = bytes.Repeat([]byte{0xa5}, 1<<20)
	})
}

func storeFailing(s *Supervisor) bool {
	s.metrics.mu.Lock()
	defer s.metrics.mu.Unlock()
	return s.metrics.storeFailing
}

// A submission on a full disk is answered io_error naming the cause,
// logged at ERROR, stores nothing and costs nothing already stored; once
// space returns, submissions go through again.
func TestFullDiskSubmission(t *testing.T) {
	home := smallDisk(t, "8m")
	logs := &testenv.Buffer{}
	s := openOnDisk(t, home, logs)
	defer s.Close(context.Background())
	ctx := context.Background()
	for i := range 3 {
		if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, fmt.Sprintf("before%d", i), protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil)}); err != nil {
			t.Fatal(err)
		}
	}
	free := fillDisk(t, home)
	_, _, err := s.Submit(ctx, SubmitRequest{Spec: bigVerifySpec(t, "big")})
	e := protocol.AsError(err)
	if e.Code != protocol.CodeIOError || !e.Retryable || !strings.Contains(e.Message, "no space left on device") {
		t.Fatalf("submit on a full disk: %v, want io_error naming ENOSPC", err)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "no space left on device") {
		t.Fatalf("not logged at ERROR with its cause:\n%s", logs)
	}
	if !storeFailing(s) {
		t.Error("metrics do not show the store failing")
	}
	jobs, err := s.List(ctx, "", 0)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("after the failed write: %d jobs (%v), want the 3 before", len(jobs), err)
	}
	if _, err := s.Status(ctx, "big"); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("the refused job: %v", err)
	}
	free()
	job, created, err := s.Submit(ctx, SubmitRequest{Spec: bigVerifySpec(t, "big")})
	if err != nil || !created || job.State != lifecycle.Queued {
		t.Fatalf("submit once space returned: %v %v", created, err)
	}
	if storeFailing(s) || !strings.Contains(logs.String(), "store writable again") {
		t.Fatalf("recovery not visible:\n%s", logs)
	}
}

// An attempt whose progress cannot be recorded waits for space (the store
// never lies about it, nothing is published) while the daemon keeps
// answering; once space returns the attempt ends as it would have.
func TestFullDiskDuringAttempt(t *testing.T) {
	home := smallDisk(t, "16m")
	logs := &testenv.Buffer{}
	s := openOnDisk(t, home, logs)
	ctx := context.Background()
	a, sp, prog := preparedAttempt(t, s, "job")
	free := fillDisk(t, home)
	res := bigResult(sp, a.n)
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		s.accept(ctx, attemptResult{a: a, spec: sp, prog: prog, out: outcome{result: &res, wall: time.Millisecond}, log: s.log})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !storeFailing(s) {
		if time.Now().After(deadline) {
			t.Fatalf("the large result's write did not fail on the full disk:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Meanwhile: reads answer, the attempt is not accepted, submissions are
	// answered at once.
	st, err := s.Status(ctx, "job")
	if err != nil || st.Job.State == lifecycle.Accepted || st.Job.Result != nil {
		t.Fatalf("during the wait: %v %+v", err, st.Job)
	}
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: bigVerifySpec(t, "other")}); protocol.CodeOf(err) != protocol.CodeIOError {
		t.Fatalf("submit while an attempt waits: %v", err)
	}
	select {
	case <-accepted:
		t.Fatal("acceptance returned while the disk was full")
	default:
	}
	free()
	<-accepted
	st, err = s.Status(ctx, "job")
	if err != nil || st.Job.State != lifecycle.Accepted {
		t.Fatalf("after space returned: %v %+v", err, st.Job)
	}
	got, err := protocol.ParseResult(st.Job.Result)
	if err != nil || len(got.Output) != len(res.Output) {
		t.Fatalf("accepted result: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkBolt(t, home)
}

// A supervisor that closes while an attempt waits for space does not hang:
// the attempt stays unfinished in the store, and the next boot's recovery
// deals with it as after a crash.
func TestFullDiskCloseWhileWaiting(t *testing.T) {
	home := smallDisk(t, "16m")
	logs := &testenv.Buffer{}
	s := openOnDisk(t, home, logs)
	ctx := context.Background()
	a, sp, prog := preparedAttempt(t, s, "job")
	free := fillDisk(t, home)
	res := bigResult(sp, a.n)
	s.runs.Add(1) // as the scheduler counts a running attempt
	go func() {
		defer s.runs.Done()
		s.accept(ctx, attemptResult{a: a, spec: sp, prog: prog, out: outcome{result: &res, wall: time.Millisecond}, log: s.log})
	}()
	for !storeFailing(s) {
		time.Sleep(10 * time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctx) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Close hangs while an attempt waits for space")
	}
	free()
	s = openOnDisk(t, home, logs)
	defer s.Close(ctx)
	st, err := s.Status(ctx, "job")
	if err != nil || st.Job.State != lifecycle.Unknown || st.Attempts[0].State != lifecycle.Unknown {
		t.Fatalf("after restart: %v %+v", err, st)
	}
}

// preparedAttempt submits an execute job and takes it to running, as the
// scheduler and a launched worker would.
func preparedAttempt(t *testing.T, s *Supervisor, id string) (*active, *protocol.JobSpec, *savedProgram) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, id, protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{}, nil)}); err != nil {
		t.Fatal(err)
	}
	a, _, err := s.prepareNext(ctx)
	if err != nil || a == nil {
		t.Fatalf("prepare: %v", err)
	}
	sp, prog, err := s.frozenSpec(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.transition(ctx, a, lifecycle.Running, "worker launched", nil); err != nil {
		t.Fatal(err)
	}
	return a, sp, prog
}

// bigResult is an execute result of the maximal output: recording it
// writes megabytes, more than a full disk's free pages.
func bigResult(sp *protocol.JobSpec, n uint32) protocol.Result {
	out := make([]uint64, protocol.MaxResultOutputs)
	for i := range out {
		out[i] = 18446744069414584320 - uint64(i)
	}
	return protocol.Result{Contract: protocol.ContractV1, JobID: sp.JobID, Attempt: n, Profile: sp.Profile,
		ProgramIdentity: *sp.Program.Identity, Kind: protocol.KindExecution, Output: out, Reductions: 3, Budget: sp.Limits.Reductions}
}

// checkBolt runs bbolt's own consistency check on the home's store.
func checkBolt(t *testing.T, home string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(storeDir(home), bolt.FileName), 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("store check: %v", err)
	}
}
