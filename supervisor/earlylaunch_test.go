package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// recordingLauncher notes the calls a supervisor makes on its launcher.
type recordingLauncher struct {
	stubLauncher
	mu    sync.Mutex
	calls []string
}

func (r *recordingLauncher) note(c string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recordingLauncher) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func (r *recordingLauncher) RemoveLeftovers(context.Context) ([]string, error) {
	r.note("leftovers")
	return []string{"cgroup x"}, nil
}
func (r *recordingLauncher) Prewarm()     { r.note("prewarm") }
func (r *recordingLauncher) Close() error { r.note("close"); return nil }

// A one-shot supervisor makes its launcher while its store opens. On a
// store another supervisor owns, the store's error is returned and the
// launcher is closed without having swept anything or started a worker;
// on its own store, leftovers are removed once, before the worker starts.
func TestOneShotLauncherMadeWhileTheStoreOpens(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	owner, _ := openStub(t, home, nil)
	oneShot := func(l *recordingLauncher) (*Supervisor, error) {
		return Open(ctx, Config{Home: home, Slots: 1, OneShot: true,
			NewLauncher: func(context.Context) (Launcher, error) { l.note("made"); return l, nil }})
	}

	locked := &recordingLauncher{}
	if s, err := oneShot(locked); !errors.Is(err, store.ErrLocked) {
		if s != nil {
			s.Close(ctx)
		}
		t.Fatalf("open on an owned store: %v, want ErrLocked", err)
	}
	if got := locked.seen(); !slices.Equal(got, []string{"made", "close"}) {
		t.Fatalf("launcher calls on an owned store: %v", got)
	}

	owner.Close(ctx)
	own := &recordingLauncher{}
	s, err := oneShot(own)
	if err != nil {
		t.Fatal(err)
	}
	if got := own.seen(); !slices.Equal(got, []string{"made", "leftovers", "prewarm"}) {
		t.Fatalf("launcher calls: %v", got)
	}
	s.Close(ctx)
	if got := own.seen(); !slices.Equal(got, []string{"made", "leftovers", "prewarm", "close"}) {
		t.Fatalf("launcher calls after Close: %v", got)
	}
}

// A damaged store: its lock was had, so what earlier boots left was swept
// and the worker started as the file was checked; the check then fails,
// the launcher is closed (with the worker, never given a job) and the
// error is the store's.
func TestOneShotLauncherClosedOnADamagedStore(t *testing.T) {
	home := t.TempDir()
	dir := storeDir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(filepath.Join(dir, store.FileName), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	l := &recordingLauncher{}
	s, err := Open(context.Background(), Config{Home: home, Slots: 1, OneShot: true,
		NewLauncher: func(context.Context) (Launcher, error) { l.note("made"); return l, nil }})
	if err == nil {
		s.Close(context.Background())
		t.Fatal("a damaged store opened")
	}
	if errors.Is(err, store.ErrLocked) {
		t.Fatalf("error %v", err)
	}
	if got := l.seen(); !slices.Equal(got, []string{"made", "leftovers", "prewarm", "close"}) {
		t.Fatalf("launcher calls on a damaged store: %v", got)
	}
}

// sweptLauncher is a launcher whose cgroups another process removed.
type sweptLauncher struct{ recordingLauncher }

func (*sweptLauncher) Intact() bool { return false }

// A launcher made before the lock that lost its cgroups meanwhile (the
// holder before this run swept them as an earlier boot's) is closed and
// made again under the lock, before leftovers are swept and the worker
// starts; so is one whose making failed before the lock.
func TestOneShotLauncherMadeAgainUnderTheLock(t *testing.T) {
	ctx := context.Background()
	for _, first := range []string{"swept", "failed"} {
		t.Run(first, func(t *testing.T) {
			swept, fresh := &sweptLauncher{}, &recordingLauncher{}
			made := 0
			s, err := Open(ctx, Config{Home: t.TempDir(), Slots: 1, OneShot: true,
				NewLauncher: func(context.Context) (Launcher, error) {
					made++
					switch {
					case made > 1:
						fresh.note("made")
						return fresh, nil
					case first == "failed":
						return nil, errors.New("describe worker: killed")
					}
					swept.note("made")
					return swept, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			if first == "swept" {
				if got := swept.seen(); !slices.Equal(got, []string{"made", "close"}) {
					t.Errorf("swept launcher's calls: %v", got)
				}
			}
			if got := fresh.seen(); made != 2 || !slices.Equal(got, []string{"made", "leftovers", "prewarm"}) {
				t.Errorf("made %d times; the new launcher's calls: %v", made, got)
			}
		})
	}
}
