package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// populate writes n jobs into s along every path of the lifecycle, with
// one large spec (so that the file holds overflow pages) and a queue.
func populate(t testing.TB, s store.Store, n int) {
	t.Helper()
	ctx := context.Background()
	// Job 0's spec is large: a bucket of its own (specs.go).
	big := bytes.Repeat([]byte("x"), specBucketFrom+1000)
	for i := range n {
		id := fmt.Sprintf("job-%04d", i)
		spec := specOf(id)
		if i == 0 {
			spec = append([]byte(`{"pad":"`), append(big, `"}`...)...)
		}
		err := s.Update(ctx, func(tx store.Tx) error {
			now := time.Unix(1700000000+int64(i), 0).UTC()
			j := &store.Job{ID: id, SpecDigest: store.SpecDigest(spec), State: lifecycle.Queued, Seq: uint64(i + 1),
				Created: now, Updated: now, Retry: store.RetryPolicy{MaxAttempts: 2}}
			if err := tx.CreateJob(j, spec); err != nil {
				return err
			}
			if err := tx.AppendEvent(store.Event{Job: id, Time: now, To: lifecycle.Queued, Reason: "submitted"}); err != nil {
				return err
			}
			if i%5 == 0 {
				return tx.Enqueue(id, int32(i%3), j.Seq)
			}
			j.Attempts = 1
			if err := tx.PutJob(j); err != nil {
				return err
			}
			a := &store.Attempt{Job: id, N: 1, Boot: "boot-1", Created: now, State: lifecycle.Queued}
			if err := tx.PutAttempt(a); err != nil {
				return err
			}
			end := []lifecycle.State{lifecycle.Running, lifecycle.Produced, lifecycle.Verified, lifecycle.Accepted}
			if i%5 == 1 {
				end = []lifecycle.State{lifecycle.Running, lifecycle.Failed}
			}
			for _, st := range end {
				a.State = st
				if st == lifecycle.Verified {
					a.Verified = []byte(`{"ok":true}`)
				}
				if err := tx.PutAttempt(a); err != nil {
					return err
				}
				if err := tx.AppendEvent(store.Event{Job: id, Time: now, Attempt: 1, To: st, Reason: "step " + string(st)}); err != nil {
					return err
				}
			}
			j.State = a.State
			if a.State == lifecycle.Accepted {
				j.Accepted = 1
			}
			return tx.PutJob(j)
		})
		if err != nil {
			t.Fatalf("populate %s: %v", id, err)
		}
	}
}

// damageFixture is a populated store file, made once per test binary.
var damageFixture = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "store-damage")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s, err := Open(dir, time.Second)
	if err != nil {
		return nil, err
	}
	populate(nopTB{}, s, 60)
	// The same bytes in every run, so that a fuzz input found once
	// damages the same field again: no wall-clock time in the file.
	if err := s.Update(context.Background(), func(tx store.Tx) error {
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		m.Created = time.Unix(1700000000, 0).UTC()
		return tx.PutMeta(m)
	}); err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, FileName))
})

// nopTB lets populate run outside a test; its failures panic.
type nopTB struct{ testing.TB }

func (nopTB) Helper()                   {}
func (nopTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// contents is every record's payload, read through the store itself.
func contents(t testing.TB, s *Store) map[string]map[string]string {
	t.Helper()
	d := unsealed(t, dumpDB(t, s.db))
	// And the typed reads work on every job.
	err := s.View(context.Background(), func(tx store.Tx) error {
		return tx.ForEachJob(func(j *store.Job) bool {
			if _, err := tx.Attempts(j.ID); err != nil {
				t.Fatalf("attempts of %s: %v", j.ID, err)
			}
			if _, err := tx.Events(j.ID); err != nil {
				t.Fatalf("events of %s: %v", j.ID, err)
			}
			if _, err := tx.Spec(j.ID); err != nil {
				t.Fatalf("spec of %s: %v", j.ID, err)
			}
			return true
		})
	})
	if err != nil {
		t.Fatalf("read the store: %v", err)
	}
	return d
}

// openDamaged writes file with the byte at off XORed with x into a fresh
// dir and opens it. It returns the open error, or the store's contents
// and bbolt's own consistency check.
func openDamaged(t testing.TB, file []byte, off int, x byte) (map[string]map[string]string, error) {
	t.Helper()
	// Its own dir, removed at once: the exhaustive test opens a million.
	dir, err := os.MkdirTemp("", "damaged-store")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bad := bytes.Clone(file)
	bad[off] ^= x
	if err := os.WriteFile(filepath.Join(dir, FileName), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, time.Second)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var problems []string
	_ = s.db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			problems = append(problems, err.Error())
		}
		return nil
	})
	if len(problems) > 0 {
		t.Fatalf("byte %d ^ %#x: the store opened but bbolt finds it inconsistent: %v", off, x, problems)
	}
	return contents(t, s), nil
}

// judge: a damaged file is refused with a CorruptError that names the
// file and a page or record, or it opens and reads exactly as before.
func judge(t testing.TB, want map[string]map[string]string, off int, x byte, got map[string]map[string]string, err error) bool {
	t.Helper()
	if err != nil {
		var ce *store.CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), FileName) ||
			!(ce.HasPage || ce.Bucket != "") {
			t.Fatalf("byte %d ^ %#x: refused without a clear damage report: %v", off, x, err)
		}
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("byte %d ^ %#x: the damaged store opened and reads differently", off, x)
	}
	return false
}

// TestDamagedStoreIsRefusedOrIntact flips bytes at several offsets of
// every page of a populated store: each open either refuses the file with
// a clear report or reads exactly what was written. Nothing panics.
// scripts/fuzz.sh runs FuzzDamagedStore over every offset.
func TestDamagedStoreIsRefusedOrIntact(t *testing.T) {
	t.Run("mapped", testDamagedStore)
	// A file that cannot be mapped is checked a page at a time.
	t.Run("read-by-page", func(t *testing.T) {
		defer func(m bool) { mapPages = m }(mapPages)
		mapPages = false
		testDamagedStore(t)
	})
}

func testDamagedStore(t *testing.T) {
	file, err := damageFixture()
	if err != nil {
		t.Fatal(err)
	}
	want, err := openDamaged(t, file, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	offsets := []int{0, 8, 10, 12, 16, 20, 24, 40, 64, 100, 1000, 2047, 3000, page - 1}
	refused, intact := 0, 0
	for p := 0; p*page < len(file); p++ {
		for _, o := range offsets {
			got, err := openDamaged(t, file, p*page+o, 0x41)
			if judge(t, want, p*page+o, 0x41, got, err) {
				refused++
			} else {
				intact++
			}
		}
	}
	t.Logf("%d pages: %d damaged opens refused, %d read intact", len(file)/page, refused, intact)
	if refused == 0 {
		t.Fatal("no damage was ever detected")
	}
}

func FuzzDamagedStore(f *testing.F) {
	file, err := damageFixture()
	if err != nil {
		f.Fatal(err)
	}
	for _, o := range []uint32{0, 8, 10, 4096 + 16, 3*4096 + 100} {
		f.Add(o, byte(1))
	}
	var want map[string]map[string]string
	f.Fuzz(func(t *testing.T, off uint32, x byte) {
		if want == nil {
			if want, err = openDamaged(t, file, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		o := int(off % uint32(len(file)))
		got, err := openDamaged(t, file, o, x|1)
		judge(t, want, o, x|1, got, err)
	})
}

// TestCheckSurvivesAShrinkingFile: the check maps the file's pages; a
// file cut short under it (by something that ignores the lock) ends the
// check with an error, not in a fault that kills the process.
func TestCheckSurvivesAShrinkingFile(t *testing.T) {
	file, err := damageFixture()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The meta pages stay; the pages they lead to are gone once the
	// check, told the size it saw before, maps them.
	if err := os.Truncate(path, 2*4096); err != nil {
		t.Fatal(err)
	}
	_, err = checkPages(f, path, int64(len(file)))
	if err == nil || !strings.Contains(err.Error(), "changed while it was checked") {
		t.Fatalf("check of a file cut under it: %v, want the file changed while it was checked", err)
	}
}

// TestDamagedStoreEveryByte flips every byte of the pages in use, three
// ways (one low bit, the high bit, all bits): minutes, so only when
// STORE_DAMAGE_EXHAUSTIVE=1 (scripts/fuzz.sh runs it).
func TestDamagedStoreEveryByte(t *testing.T) {
	if os.Getenv("STORE_DAMAGE_EXHAUSTIVE") != "1" {
		t.Skip("set STORE_DAMAGE_EXHAUSTIVE=1 to flip every byte (minutes)")
	}
	file, err := damageFixture()
	if err != nil {
		t.Fatal(err)
	}
	want, err := openDamaged(t, file, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := checkPages(bytes.NewReader(file), "fixture", int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	used := int(rep.Pages) * rep.PageSize
	refused := 0
	for off := 0; off < used; off++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			got, err := openDamaged(t, file, off, x)
			if judge(t, want, off, x, got, err) {
				refused++
			}
		}
	}
	t.Logf("%d bytes × 3 flips: %d refused, %d read intact", used, refused, 3*used-refused)
}
