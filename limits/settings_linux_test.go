package limits

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestV1Settings(t *testing.T) {
	mem, pids, cpu := v1Settings(Spec{MemoryBytes: 32 << 20, Pids: 16, CPUQuotaMicros: 20_000}, true)
	want := []setting{{"memory.limit_in_bytes", "33554432"}, {"memory.memsw.limit_in_bytes", "33554432"}}
	if !reflect.DeepEqual(mem, want) {
		t.Errorf("memory %v", mem) // limit must come before memsw
	}
	if !reflect.DeepEqual(pids, []setting{{"pids.max", "16"}}) {
		t.Errorf("pids %v", pids)
	}
	if !reflect.DeepEqual(cpu, []setting{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", "20000"}}) {
		t.Errorf("cpu %v", cpu)
	}
	mem, pids, cpu = v1Settings(Spec{MemoryBytes: 1 << 20}, false)
	if len(mem) != 1 || pids != nil || cpu != nil {
		t.Errorf("without memsw: %v %v %v", mem, pids, cpu)
	}
}

func TestV2Settings(t *testing.T) {
	got := v2Settings(Spec{MemoryBytes: 1 << 20, Pids: 8, CPUQuotaMicros: 5000, CPUPeriodMicros: 10000}, true, true)
	want := []setting{
		{"memory.oom.group", "1"}, {"memory.max", "1048576"}, {"memory.swap.max", "0"},
		{"pids.max", "8"}, {"cpu.max", "5000 10000"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	if got := v2Settings(Spec{}, false, false); got != nil {
		t.Errorf("zero spec: %v", got)
	}
}

func TestSpecValidate(t *testing.T) {
	bad := []Spec{
		{MemoryBytes: -1}, {Pids: -1}, {CPUQuotaMicros: -1}, {CPUPeriodMicros: -5},
		{CPUPeriodMicros: 100_000}, {CPUQuotaMicros: 999}, {CPUQuotaMicros: 5000, CPUPeriodMicros: 999},
		{CPUQuotaMicros: 5000, CPUPeriodMicros: 1_000_001},
	}
	for _, s := range bad {
		if err := s.Validate(); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%+v: %v", s, err)
		}
	}
	good := []Spec{{}, {MemoryBytes: 1}, {Pids: 1}, {CPUQuotaMicros: 1000}, {CPUQuotaMicros: 4_000_000, CPUPeriodMicros: 1_000_000}, {MemoryBytes: math.MaxInt64}}
	for _, s := range good {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

func TestCheck(t *testing.T) {
	none := Capabilities{CgroupMode: ModeNone}
	none.setReason(ReasonMemory, "no cgroups here")
	if err := none.Check(Spec{}, false); err != nil {
		t.Errorf("zero spec must pass everywhere: %v", err)
	}
	err := none.Check(Spec{MemoryBytes: 1 << 20, Pids: 4}, true)
	if !errors.Is(err, ErrUnsupportedLimit) {
		t.Fatalf("got %v", err)
	}
	for _, s := range []string{"memory (no cgroups here)", "pids (not probed)", "wall_clock"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	if err := none.Check(Spec{MemoryBytes: -1}, false); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("invalid spec: %v", err)
	}
	// An enforced limit without the OOM counter is not advertised.
	c := Capabilities{MemoryLimit: true}
	if err := c.Check(Spec{MemoryBytes: 1}, false); !errors.Is(err, ErrUnsupportedLimit) {
		t.Errorf("memory without oom detection: %v", err)
	}
	all := Capabilities{MemoryLimit: true, OOMDetection: true, PidsLimit: true, CPUQuota: true, WallClock: true}
	if err := all.Check(Spec{MemoryBytes: 1, Pids: 1, CPUQuotaMicros: 1000}, true); err != nil {
		t.Errorf("all enforced: %v", err)
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"", ".", "..", ".probe", "a/b", "a b", "ä", strings.Repeat("x", 201), "a\x00"} {
		if err := ValidName(n); !errors.Is(err, ErrInvalidName) {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"job-1", "A.b_c", "0"} {
		if err := ValidName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
}

func TestParsers(t *testing.T) {
	kv := parseKeyed([]byte("oom_kill_disable 0\nunder_oom 0\noom_kill 3\ngarbage\nx y z\nneg -1\n"))
	if kv["oom_kill"] != 3 || len(kv) != 3 {
		t.Errorf("parseKeyed: %v", kv)
	}
	if got := parsePids([]byte("12\n\nx\n-3\n0\n4\n")); !reflect.DeepEqual(got, []int{12, 4}) {
		t.Errorf("parsePids: %v", got)
	}
}

func TestDirSet(t *testing.T) {
	d := dirSet{memory: "/m", cpu: "/c", cpuacct: "/c", v2: "/u"}
	if got := d.all(); !reflect.DeepEqual(got, []string{"/u", "/m", "/c"}) {
		t.Errorf("all %v", got)
	}
	if got := d.join("x").v1(); !reflect.DeepEqual(got, []string{"/m/x", "/c/x"}) {
		t.Errorf("join v1 %v", got)
	}
	if !(dirSet{}).empty() {
		t.Error("empty")
	}
}
