package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// TestFullDisk runs the real daemon on a home that is a small tmpfs and
// fills it: before, during a job, and with the daemon idle. Submissions on
// the full disk are answered io_error naming "no space left on device" and
// logged at ERROR; nothing accepted before is lost; a job whose disk fills
// under it publishes nothing half-written; the daemon keeps answering;
// once space returns everything works again, also after a restart.
func TestFullDisk(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	if err := unix.Mount("tmpfs", home, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64m,mode=0700"); err != nil {
		t.Fatalf("mount a tmpfs home: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(home, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", home, err)
		}
	})
	d := startDaemon(t, home, 2)
	ctx := context.Background()
	// Accepted before: proofs with certificates kept in the home.
	var before []*apitypes.JobStatus
	for i := range 3 {
		id := fmt.Sprintf("before-%d", i)
		if _, err := d.client.Submit(ctx, jobSpec(t, id, protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{uint64(i), 1}, protocol.Limits{}), 0, nil); err != nil {
			t.Fatal(err)
		}
		st, err := d.client.WaitEnd(ctx, id)
		if err != nil || st.Job.State != "accepted" {
			t.Fatalf("%s: %v %+v", id, err, st)
		}
		before = append(before, st)
	}

	// A job under way when the disk fills.
	spin := program(t, "spin.nox")
	if _, err := d.client.Submit(ctx, jobSpec(t, "during", protocol.OpProve, spin, []uint64{17}, protocol.Limits{}), 0, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the job to run", func() bool {
		st, err := d.client.Status(ctx, "during")
		return err == nil && st.Job.State == "running"
	})
	free := fillDisk(t, home)

	// A submission whose frozen spec needs new store pages.
	big := jobSpecWith(t, "big", protocol.OpVerify, "[5 [[0 2] [0 6]]]", []uint64{1, 2}, protocol.Limits{}, func(js *protocol.JobSpec) {
		js.Artifact = bytes.Repeat([]byte{0x5a}, 1<<20)
	})
	_, err := d.client.Submit(ctx, big, 0, nil)
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeIOError || !pe.Retryable || !strings.Contains(pe.Message, "no space left on device") {
		t.Fatalf("submit on a full disk: %v, want io_error naming ENOSPC", err)
	}
	// The daemon answers, and what was accepted is as it was.
	for _, old := range before {
		st, err := d.client.Status(ctx, old.Job.JobID)
		if err != nil || st.Job.State != "accepted" || !bytes.Equal(st.Job.Result, old.Job.Result) {
			t.Fatalf("%s on the full disk: %v %+v", old.Job.JobID, err, st)
		}
	}
	if _, err := d.client.Status(ctx, "big"); err == nil {
		t.Fatal("the refused submission was stored")
	}
	metrics, err := d.client.Metrics(ctx)
	if err != nil || !strings.Contains(string(metrics), "cyber_supervisor_store_failing 1") {
		t.Fatalf("metrics on the full disk: %v\n%s", err, metricLine(metrics, "cyber_supervisor_store_failing"))
	}
	// Let the running job meet the full disk, then give the space back.
	time.Sleep(2 * time.Second)
	free()
	st, err := d.client.WaitEnd(ctx, "during")
	if err != nil {
		t.Fatal(err)
	}
	checkJob(t, home, st) // accepted only with a complete certificate that verifies
	if st.Job.State != "accepted" && (st.Job.Error == nil || st.Job.Error.Code != protocol.CodeIOError) {
		t.Fatalf("the job the disk filled under: %s %+v, want accepted or io_error", st.Job.State, st.Job.Error)
	}
	t.Logf("the job under way when the disk filled: %s %+v", st.Job.State, st.Job.Error)
	if st.Job.State != "accepted" {
		// The attempt's end is recorded before its sandbox is removed:
		// give the removal a moment.
		deadline := time.Now().Add(10 * time.Second)
		for {
			ents, _ := os.ReadDir(filepath.Join(home, "sandboxes", "during"))
			if len(ents) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a failed job left its sandbox: %v\n%s", ents, d.log)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Space is back: submissions and jobs work again.
	if _, err := d.client.Submit(ctx, big, 0, nil); err != nil {
		t.Fatalf("submit once space returned: %v", err)
	}
	if _, err := d.client.Submit(ctx, jobSpec(t, "after", protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{7, 1}, protocol.Limits{}), 0, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := d.client.WaitEnd(ctx, "after"); err != nil || st.Job.State != "accepted" {
		t.Fatalf("after: %v %+v", err, st)
	}
	d.stop(t)
	log := d.log.String()
	if !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "no space left on device") || !strings.Contains(log, "store writable again") {
		t.Fatalf("the daemon's log does not show the full disk and its end:\n%s", log)
	}
	checkStoreFile(t, home)
	// And after a restart: everything accepted is there, certificates
	// verify.
	d = startDaemon(t, home, 2)
	defer d.stop(t)
	for _, id := range []string{"before-0", "before-1", "before-2", "after"} {
		st, err := d.client.Status(ctx, id)
		if err != nil || st.Job.State != "accepted" {
			t.Fatalf("%s after the restart: %v %+v", id, err, st)
		}
		checkJob(t, home, st)
	}
}

// fillDisk writes a file into dir until the disk is full and returns the
// function that frees the space.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for _, n := range []int{len(chunk), 4096, 1} {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
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

// checkStoreFile runs bbolt's consistency check on the home's store.
func checkStoreFile(t *testing.T, home string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(home, "store", bolt.FileName), 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
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
		t.Fatalf("store check after the full disk: %v", err)
	}
}
