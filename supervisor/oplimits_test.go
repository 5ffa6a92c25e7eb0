package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The built-in limits are finite: a memory share of the host per slot
// and an hour; ceilings of the host's memory and a week.
func TestOperatorLimitsBuiltIn(t *testing.T) {
	l, err := OperatorLimits{}.withDefaults(4, 16<<30)
	if err != nil {
		t.Fatal(err)
	}
	want := OperatorLimits{DefaultMemory: 2 << 30, DefaultWallTime: time.Hour, MaxMemory: 16 << 30, MaxWallTime: 7 * 24 * time.Hour}
	if l != want {
		t.Fatalf("built-ins %+v, want %+v", l, want)
	}
	// A ceiling below a built-in default lowers the default.
	l, err = OperatorLimits{MaxMemory: 64 << 20, MaxWallTime: time.Minute}.withDefaults(1, 16<<30)
	if err != nil || l.DefaultMemory != 64<<20 || l.DefaultWallTime != time.Minute {
		t.Fatalf("%+v %v", l, err)
	}
	// A tiny host still gives a worker what it needs.
	if l, err = (OperatorLimits{}).withDefaults(64, 64<<20); err != nil || l.DefaultMemory != MinWorkerMemory {
		t.Fatalf("tiny host: %+v %v", l, err)
	}
	for name, bad := range map[string]OperatorLimits{
		"default above max":      {DefaultMemory: 128 << 20, MaxMemory: 64 << 20},
		"below a worker's need":  {DefaultMemory: 1 << 20},
		"time default above max": {DefaultWallTime: time.Hour, MaxWallTime: time.Minute},
		"sub-millisecond":        {DefaultWallTime: time.Microsecond},
	} {
		if _, err := bad.withDefaults(1, 16<<30); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if HostMemory() < 64<<20 {
		t.Errorf("host memory %d", HostMemory())
	}
}

// A job that asks for no limits gets the defaults in its frozen spec (the
// worker and the deadline see them), a job that asks for more than a
// ceiling is unsupported_limit and one below a worker's need invalid_job
// naming the minimum, both before anything is stored; resubmitting the
// same payload is still the same job.
func TestOperatorLimitsAtAdmission(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), func(c *Config) {
		c.Limits = OperatorLimits{DefaultMemory: 256 << 20, DefaultWallTime: 90 * time.Second, MaxMemory: 1 << 30, MaxWallTime: time.Hour}
	})
	ctx := context.Background()
	b := spec(t, "none", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{}, nil)
	job, created, err := s.Submit(ctx, SubmitRequest{Spec: b})
	if err != nil || !created {
		t.Fatal(err)
	}
	frozen := frozenLimits(t, s, "none")
	if frozen.MemoryBytes != 256<<20 || frozen.WallTimeMS != 90_000 {
		t.Fatalf("frozen limits %+v, want the defaults", frozen)
	}
	if job.RequestDigest == "" || job.RequestDigest == job.SpecDigest {
		t.Fatalf("digests %q %q", job.RequestDigest, job.SpecDigest)
	}
	again, created, err := s.Submit(ctx, SubmitRequest{Spec: b})
	if err != nil || created || again.ID != "none" {
		t.Fatalf("resubmission: %v %v", created, err)
	}
	// Asked-for limits within the ceilings are kept as they are.
	s.Submit(ctx, SubmitRequest{Spec: spec(t, "own", protocol.OpExecute, add2, []uint64{3, 5}, protocol.Limits{MemoryBytes: 64 << 20, WallTimeMS: 500}, nil)})
	if own := frozenLimits(t, s, "own"); own.MemoryBytes != 64<<20 || own.WallTimeMS != 500 {
		t.Fatalf("own limits %+v", own)
	}
	for name, c := range map[string]struct {
		lim  protocol.Limits
		code protocol.Code
		want string
	}{
		"memory above max":  {protocol.Limits{MemoryBytes: 2 << 30}, protocol.CodeUnsupportedLimit, "--max-memory"},
		"time above max":    {protocol.Limits{WallTimeMS: 2 * 3600 * 1000}, protocol.CodeUnsupportedLimit, "--max-time"},
		"memory 4KiB":       {protocol.Limits{MemoryBytes: 4 << 10}, protocol.CodeInvalidJob, "8388608 bytes (8 MiB)"},
		"memory just below": {protocol.Limits{MemoryBytes: MinWorkerMemory - 1}, protocol.CodeInvalidJob, "a worker needs to start"},
	} {
		_, _, err := s.Submit(ctx, SubmitRequest{Spec: spec(t, "x-"+strings.ReplaceAll(name, " ", "-"), protocol.OpExecute, add2, nil, c.lim, nil)})
		if protocol.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %s naming %q", name, err, c.code, c.want)
		}
	}
	jobs, _ := s.List(ctx, "", 0)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs stored, want the 2 admitted", len(jobs))
	}
	if r := s.Limits(); r.DefaultMemoryBytes != 256<<20 || r.MaxWallTimeMS != 3600_000 || r.MinMemoryBytes != MinWorkerMemory || !r.MemoryEnforced {
		t.Errorf("limits report %+v", r)
	}
}

// Where memory limits are not enforced, no default memory is filled in
// (admission would refuse a job asking for one), but the time default is.
func TestOperatorLimitsWithoutMemoryEnforcement(t *testing.T) {
	s, _ := openStub(t, t.TempDir(), func(c *Config) { c.Launcher = noMemoryLauncher{} })
	if _, _, err := s.Submit(context.Background(), SubmitRequest{Spec: spec(t, "j", protocol.OpExecute, add2, nil, protocol.Limits{}, nil)}); err != nil {
		t.Fatal(err)
	}
	if l := frozenLimits(t, s, "j"); l.MemoryBytes != 0 || l.WallTimeMS != 3600_000 {
		t.Fatalf("frozen limits %+v", l)
	}
}

type noMemoryLauncher struct{ stubLauncher }

func (noMemoryLauncher) Capabilities() launch.Capabilities {
	c := allCaps()
	c.Limits.Memory = false
	return launch.Capabilities{Worker: c}
}

func frozenLimits(t *testing.T, s *Supervisor, id string) protocol.Limits {
	t.Helper()
	var raw []byte
	if err := s.store.View(context.Background(), func(tx store.Tx) (err error) { raw, err = tx.Spec(id); return err }); err != nil {
		t.Fatal(err)
	}
	js, err := protocol.ParseJobSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	return js.Limits
}
