package limits

import "path/filepath"

// dirSet holds the directory of one cgroup node (a parent, an instance, a
// group) in every hierarchy the package uses. An empty field means the
// hierarchy is not used for that node. cpu and cpuacct hold the same path
// when the two controllers are co-mounted.
type dirSet struct {
	memory, pids, cpu, cpuacct, freezer string // v1
	v2                                  string // cgroup2: tracking on hybrid, everything on pure v2
}

// join returns the child node elem of every used directory.
func (d dirSet) join(elem string) dirSet {
	j := func(p string) string {
		if p == "" {
			return ""
		}
		return filepath.Join(p, elem)
	}
	return dirSet{j(d.memory), j(d.pids), j(d.cpu), j(d.cpuacct), j(d.freezer), j(d.v2)}
}

// v1 returns the distinct v1 directories.
func (d dirSet) v1() []string {
	return uniq(d.memory, d.pids, d.cpu, d.cpuacct, d.freezer)
}

// all returns every distinct directory, v2 first so that a process is
// tracked before it is limited.
func (d dirSet) all() []string {
	return uniq(d.v2, d.memory, d.pids, d.cpu, d.cpuacct, d.freezer)
}

func (d dirSet) empty() bool { return len(d.all()) == 0 }

func uniq(ps ...string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if p == "" {
			continue
		}
		dup := false
		for _, q := range out {
			if q == p {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, p)
		}
	}
	return out
}
