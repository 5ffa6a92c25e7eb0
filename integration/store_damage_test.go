package integration

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// TestDamagedStoreStartsNothing damages the store of a real home, one
// page at a time (the page type byte of its header, which every page
// reachable from the root depends on), and starts `serve` on it each
// time. A damaged store must stop the start with exit 6 and a message
// naming the file and the page, with no panic, and with nothing created:
// no cgroup, no socket, no change in the home. A flip in a free page is
// harmless: serve starts, and the store still reads as it did.
func TestDamagedStoreStartsNothing(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 2)
	ctx := context.Background()
	prog := "[5 [[0 2] [0 6]]]"
	var ids []string
	for i, op := range []protocol.Operation{protocol.OpProve, protocol.OpExecute, protocol.OpProve, protocol.OpExecute} {
		id := "dmg-" + string(rune('a'+i))
		if _, err := d.client.Submit(ctx, jobSpec(t, id, op, prog, []uint64{uint64(i), 5}, protocol.Limits{}), 0, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if st := waitDone(t, d, id); st.Job.State != "accepted" {
			t.Fatalf("%s ended %s", id, st.Job.State)
		}
	}
	d.stop(t)

	dbPath := filepath.Join(home, "store", bolt.FileName)
	good, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	want := storeSummary(t, dbPath)
	before := homeListing(t, home)
	groupsBefore := cgroupEntries()
	const page = 4096
	pageRef := regexp.MustCompile(`store ` + regexp.QuoteMeta(dbPath) + ` is damaged: page \d+`)
	refused, started := 0, 0
	for p := 0; p*page < len(good); p++ {
		bad := bytes.Clone(good)
		bad[p*page+8] ^= 0xff
		if err := os.WriteFile(dbPath, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(supervisorBin, "--home", home, "serve", "--worker", workerBin,
			"--isolation", "required", "--cgroup-name", cgroupName, "--log-level", "warn")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		err, up := waitExitOrSocket(home, exited)
		if !up {
			var ee *exec.ExitError
			switch {
			case strings.Contains(out.String(), "panic") || strings.Contains(out.String(), "goroutine "):
				t.Fatalf("page %d: serve panicked:\n%s", p, out.String())
			case !errors.As(err, &ee) || ee.ExitCode() != protocol.ExitStoreDamaged:
				t.Fatalf("page %d: serve ended %v, want exit %d:\n%s", p, err, protocol.ExitStoreDamaged, out.String())
			case !pageRef.MatchString(out.String()):
				t.Fatalf("page %d: the message does not name the file and page:\n%s", p, out.String())
			}
			if now := homeListing(t, home); !slices.Equal(now, before) {
				t.Fatalf("page %d: the refused start changed the home:\nbefore %v\nafter  %v", p, before, now)
			}
			if now := cgroupEntries(); !slices.Equal(now, groupsBefore) {
				t.Fatalf("page %d: the refused start left cgroups: %v", p, now)
			}
			refused++
		} else {
			// It started: the flip hit a page nothing uses.
			cmd.Process.Signal(os.Interrupt)
			if err := <-exited; err != nil {
				t.Fatalf("page %d: serve on a store with a damaged free page: %v\n%s", p, err, out.String())
			}
			if got := storeSummary(t, dbPath); !slices.Equal(got, want) {
				t.Fatalf("page %d: the store reads differently:\n%v\n%v", p, got, want)
			}
			started++
		}
		if err := os.WriteFile(dbPath, good, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d pages: %d starts refused, %d started (free pages)", len(good)/page, refused, started)
	if refused < 4 {
		t.Fatalf("only %d damaged pages were refused", refused)
	}
}

// storeSummary is every job of the store file with its state and
// attempts, read with the store's own check (which must find nothing).
func storeSummary(t *testing.T, path string) []string {
	t.Helper()
	rep, err := bolt.CheckFile(path, 5*time.Second)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("store check: %+v %v", rep, err)
	}
	dir := t.TempDir()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bolt.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := bolt.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []string
	_ = s.View(context.Background(), func(tx store.Tx) error {
		return tx.ForEachJob(func(j *store.Job) bool {
			out = append(out, j.ID+" "+string(j.State)+" "+string(j.Result))
			return true
		})
	})
	return out
}

// homeListing is every path under home but the store file, with its type.
func homeListing(t *testing.T, home string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(home, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if filepath.Base(p) != bolt.FileName {
			out = append(out, p+" "+e.Type().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func cgroupEntries() []string {
	var out []string
	for _, g := range cgroupsNamed(cgroupName) {
		ents, _ := os.ReadDir(g)
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(g, e.Name()))
			}
		}
	}
	return out
}

// waitExitOrSocket waits until serve exits (its error) or its socket
// appears (up).
func waitExitOrSocket(home string, exited <-chan error) (err error, up bool) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-exited:
			return err, false
		case <-tick.C:
			if _, err := os.Stat(supervisor.SocketPath(home)); err == nil {
				return nil, true
			}
		case <-deadline:
			return errors.New("serve neither exited nor made its socket in 60 s"), false
		}
	}
}
