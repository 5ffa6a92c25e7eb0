package limits

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3"
)

// The v1 controllers this package uses. cpuset is deliberately absent: its
// v1 children need cpus/mems copied in before they accept tasks, and no
// limit here needs it.
const (
	ctlMemory  = "memory"
	ctlPids    = "pids"
	ctlCPU     = "cpu"
	ctlCPUAcct = "cpuacct"
	ctlFreezer = "freezer"
)

var wantedV1 = []string{ctlMemory, ctlPids, ctlCPU, ctlCPUAcct, ctlFreezer}

// hierarchy is one mounted cgroup hierarchy and the supervisor's own place
// in it.
type hierarchy struct {
	v2          bool
	controllers []string // v1 controllers co-mounted here; nil for cgroup2
	mount       string   // mount point
	own         string   // supervisor's cgroup, relative to mount ("/" = root)
	// exact: own is the supervisor's cgroup itself, not the mount's root
	// standing in for a cgroup outside the mounted subtree.
	exact bool
}

// base is the directory under which the parent group is created.
func (h *hierarchy) base(atRoot bool) string {
	if atRoot {
		return h.mount
	}
	return filepath.Join(h.mount, h.own)
}

// layout is what /proc/self/mountinfo and /proc/self/cgroup say about the
// cgroup hierarchies visible to this process.
type layout struct {
	mode string
	v1   map[string]*hierarchy // by controller; co-mounted controllers share one
	v2   *hierarchy            // the cgroup2 mount, if any
}

// discoverLayout reads the layout of the running process. It uses the
// containerd library's parser for /proc/self/cgroup so that both agree on
// what "own cgroup" means.
func discoverLayout() (*layout, error) {
	mi, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("limits: open mountinfo: %w", err)
	}
	defer mi.Close()
	cg, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("limits: open /proc/self/cgroup: %w", err)
	}
	defer cg.Close()
	return parseLayout(mi, cg)
}

// parseLayout builds a layout from mountinfo and /proc/<pid>/cgroup
// contents. Malformed lines are skipped, never trusted.
func parseLayout(mountinfo, procCgroup io.Reader) (*layout, error) {
	ownV1, ownV2, err := cgroups.ParseCgroupFromReaderUnified(procCgroup)
	if err != nil {
		return nil, fmt.Errorf("limits: parse /proc/self/cgroup: %w", err)
	}
	l := &layout{v1: map[string]*hierarchy{}}
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 4<<10), 1<<20) // lines are short; a long one grows it
	for sc.Scan() {
		m, ok := parseMountinfoLine(sc.Text())
		if !ok {
			continue
		}
		switch m.fstype {
		case "cgroup2":
			if l.v2 != nil {
				continue
			}
			own, exact := localize(m.root, ownV2)
			l.v2 = &hierarchy{v2: true, mount: m.mountpoint, own: own, exact: exact}
		case "cgroup":
			var ctls []string
			for _, opt := range strings.Split(m.superOpts, ",") {
				for _, w := range wantedV1 {
					if opt == w && l.v1[w] == nil {
						ctls = append(ctls, w)
					}
				}
			}
			if len(ctls) == 0 {
				continue
			}
			// All co-mounted controllers share one directory tree, so the
			// own path of any of them is the own path of the mount.
			own, exact := localize(m.root, ownV1[ctls[0]])
			h := &hierarchy{controllers: ctls, mount: m.mountpoint, own: own, exact: exact}
			for _, c := range ctls {
				l.v1[c] = h
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("limits: read mountinfo: %w", err)
	}
	switch {
	case len(l.v1) > 0 && l.v2 != nil:
		l.mode = ModeHybrid
	case len(l.v1) > 0:
		l.mode = ModeV1
	case l.v2 != nil:
		l.mode = ModeV2
	default:
		l.mode = ModeNone
	}
	return l, nil
}

// localize turns a cgroup path from /proc/self/cgroup into a path relative
// to a mount whose root is mountRoot (they differ for bind-mounted
// subtrees). A path outside the mounted subtree cannot be nested under, so
// the mount root is used (and exact is false).
func localize(mountRoot, own string) (rel string, exact bool) {
	if own == "" {
		return "/", false
	}
	rel, err := filepath.Rel(mountRoot, own)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "/", false
	}
	return filepath.Join("/", rel), true
}

type mountEntry struct {
	root, mountpoint, fstype, superOpts string
}

// parseMountinfoLine parses one line of proc(5) mountinfo:
// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
func parseMountinfoLine(line string) (mountEntry, bool) {
	fields := strings.Fields(line)
	sep := -1
	for i := 6; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+1 >= len(fields) {
		return mountEntry{}, false
	}
	e := mountEntry{
		root:       unescapeMountinfo(fields[3]),
		mountpoint: unescapeMountinfo(fields[4]),
		fstype:     fields[sep+1],
	}
	if len(fields) > sep+3 {
		e.superOpts = fields[sep+3]
	}
	return e, true
}

// unescapeMountinfo undoes the kernel's octal escaping of ' ', '\t', '\n'
// and '\\' in mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
