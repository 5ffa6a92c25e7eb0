package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
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

// It declares a warm pool, so that the supervisor asks it to prewarm.
func (r *recordingLauncher) Capabilities() launch.Capabilities {
	c := r.stubLauncher.Capabilities()
	c.Warm = true
	return c
}
func (r *recordingLauncher) Prewarm() error { r.note("prewarm"); return nil }
func (r *recordingLauncher) Close() error   { r.note("close"); return nil }

// Every supervisor, one-shot or not, makes its launcher only once its
// store is open: on a store another supervisor owns and on a damaged one
// nothing of the launcher is made (no cgroups, no worker); on its own
// store the launcher is made, then what earlier boots left is swept, and
// a worker starts only when asked (Prewarm).
func TestLauncherMadeOnlyOnAnOpenStore(t *testing.T) {
	ctx := context.Background()
	for _, oneShot := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneshot=%v", oneShot), func(t *testing.T) {
			home := t.TempDir()
			open := func(home string, l *recordingLauncher) (*Supervisor, error) {
				return Open(ctx, Config{Home: home, Slots: 1, OneShot: oneShot,
					NewLauncher: func(context.Context) (launch.Launcher, error) { l.note("made"); return l, nil }})
			}
			owner, _ := openStub(t, home, nil)
			locked := &recordingLauncher{}
			if s, err := open(home, locked); !errors.Is(err, store.ErrLocked) {
				if s != nil {
					s.Close(ctx)
				}
				t.Fatalf("open on an owned store: %v, want ErrLocked", err)
			}
			if got := locked.seen(); len(got) != 0 {
				t.Fatalf("launcher calls on an owned store: %v", got)
			}
			owner.Close(ctx)

			damaged := t.TempDir()
			if err := os.MkdirAll(storeDir(damaged), 0o700); err != nil {
				t.Fatal(err)
			}
			junk := make([]byte, 64<<10)
			for i := range junk {
				junk[i] = byte(i*7 + 3)
			}
			if err := os.WriteFile(filepath.Join(storeDir(damaged), bolt.FileName), junk, 0o600); err != nil {
				t.Fatal(err)
			}
			bad := &recordingLauncher{}
			if s, err := open(damaged, bad); err == nil || errors.Is(err, store.ErrLocked) {
				if s != nil {
					s.Close(ctx)
				}
				t.Fatalf("open of a damaged store: %v", err)
			}
			if got := bad.seen(); len(got) != 0 {
				t.Fatalf("launcher calls on a damaged store: %v", got)
			}

			own := &recordingLauncher{}
			s, err := open(home, own)
			if err != nil {
				t.Fatal(err)
			}
			if got := own.seen(); !slices.Equal(got, []string{"made", "leftovers"}) {
				t.Fatalf("launcher calls: %v", got)
			}
			s.Prewarm()
			s.Close(ctx)
			if got := own.seen(); !slices.Equal(got, []string{"made", "leftovers", "prewarm", "close"}) {
				t.Fatalf("launcher calls after Prewarm and Close: %v", got)
			}
		})
	}
}
