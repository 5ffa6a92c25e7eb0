package limits

import (
	"strings"
	"testing"
)

// This host: v1 controllers, cpu and cpuacct mounted separately, memory
// nested under a per-session group, a controller-less cgroup2 at unified.
const hybridMountinfo = `24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const hybridProcCgroup = `9:name=systemd:/
8:pids:/
6:freezer:/
4:memory:/process_api/6b7f
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
`

func TestParseLayoutHybrid(t *testing.T) {
	l, err := parseLayout(strings.NewReader(hybridMountinfo), strings.NewReader(hybridProcCgroup))
	if err != nil {
		t.Fatal(err)
	}
	if l.mode != ModeHybrid {
		t.Fatalf("mode %q", l.mode)
	}
	if got := l.v1[ctlMemory].base(false); got != "/sys/fs/cgroup/memory/process_api/6b7f" {
		t.Errorf("memory base %q", got)
	}
	if got := l.v1[ctlMemory].base(true); got != "/sys/fs/cgroup/memory" {
		t.Errorf("memory base at root %q", got)
	}
	if l.v1[ctlCPU] == l.v1[ctlCPUAcct] {
		t.Error("cpu and cpuacct are separate mounts here")
	}
	if _, ok := l.v1["cpuset"]; ok {
		t.Error("cpuset must not be used")
	}
	if got := l.v2.base(false); got != "/sys/fs/cgroup/unified" {
		t.Errorf("v2 base %q", got)
	}
}

func TestParseLayoutV2(t *testing.T) {
	mi := "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	pc := "0::/system.slice/cyber-supervisor.service\n"
	l, err := parseLayout(strings.NewReader(mi), strings.NewReader(pc))
	if err != nil {
		t.Fatal(err)
	}
	if l.mode != ModeV2 || len(l.v1) != 0 {
		t.Fatalf("mode %q v1 %v", l.mode, l.v1)
	}
	if got := l.v2.base(false); got != "/sys/fs/cgroup/system.slice/cyber-supervisor.service" {
		t.Errorf("v2 base %q", got)
	}
}

func TestParseLayoutV1Comounted(t *testing.T) {
	mi := `25 24 0:21 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
26 24 0:22 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
27 24 0:23 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
`
	pc := "4:pids:/sys.slice/x\n3:memory:/sys.slice/x\n2:cpu,cpuacct:/sys.slice/x\n"
	l, err := parseLayout(strings.NewReader(mi), strings.NewReader(pc))
	if err != nil {
		t.Fatal(err)
	}
	if l.mode != ModeV1 {
		t.Fatalf("mode %q", l.mode)
	}
	if l.v1[ctlCPU] != l.v1[ctlCPUAcct] {
		t.Error("co-mounted cpu,cpuacct must share a hierarchy")
	}
	if got := l.v1[ctlCPU].base(false); got != "/sys/fs/cgroup/cpu,cpuacct/sys.slice/x" {
		t.Errorf("cpu base %q", got)
	}
	if l.v1[ctlFreezer] != nil {
		t.Error("freezer is not mounted")
	}
}

func TestParseLayoutBindMountedSubtree(t *testing.T) {
	// A container sees only its own subtree: the mount root is the
	// container's cgroup, and /proc/self/cgroup shows the full path.
	mi := "40 31 0:38 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
	pc := "4:memory:/docker/abc/sub\n"
	l, err := parseLayout(strings.NewReader(mi), strings.NewReader(pc))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.v1[ctlMemory].base(false); got != "/sys/fs/cgroup/memory/sub" {
		t.Errorf("memory base %q", got)
	}
	// Own cgroup outside the mounted subtree: fall back to the mount.
	l, _ = parseLayout(strings.NewReader(mi), strings.NewReader("4:memory:/elsewhere\n"))
	if got := l.v1[ctlMemory].base(false); got != "/sys/fs/cgroup/memory" {
		t.Errorf("memory base %q", got)
	}
}

func TestParseLayoutNoneAndGarbage(t *testing.T) {
	mi := "garbage\n1 2 3\n\n99 1 0:1 / /x rw - \n24 30 0:22 / /sys rw - sysfs sysfs rw\n"
	l, err := parseLayout(strings.NewReader(mi), strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if l.mode != ModeNone {
		t.Fatalf("mode %q", l.mode)
	}
	if _, err := parseLayout(strings.NewReader(""), strings.NewReader("not a cgroup line\n")); err == nil {
		t.Error("malformed /proc/self/cgroup must be an error")
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`: "/a b",
		`/a\011b`: "/a\tb",
		`/a\134b`: `/a\b`,
		`/a\0`:    `/a\0`,
		`/a\999`:  `/a\999`,
		`\`:       `\`,
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
