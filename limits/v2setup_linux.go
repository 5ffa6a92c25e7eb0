package limits

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// enableV2Controllers makes memory, pids and cpu available to the groups of
// this instance on a pure v2 host, by enabling them in cgroup.subtree_control
// from the supervisor's own cgroup down to the instance group. Each
// controller is enabled separately so that one refusal (cpu is refused while
// realtime threads exist, for example) does not cost the others.
func (m *Manager) enableV2Controllers() {
	if m.inst.v2 == "" {
		return // setup recorded why
	}
	base := filepath.Dir(m.parent.v2)
	b, err := readFile(base, "cgroup.controllers")
	if err != nil {
		m.caps.setReason(ReasonCgroups, "%v", err)
		return
	}
	avail := strings.Fields(string(b))
	has := func(c string) bool {
		for _, a := range avail {
			if a == c {
				return true
			}
		}
		return false
	}
	enabled := map[string]error{}
	for _, c := range []string{ctlMemory, ctlPids, ctlCPU} {
		if !has(c) {
			enabled[c] = fmt.Errorf("controller %q not available in %s", c, base)
			continue
		}
		enabled[c] = m.enableV2(base, c)
	}
	set := func(ok *bool, c, reason string) {
		if err := enabled[c]; err != nil {
			m.caps.setReason(reason, "cgroup v2: %v", err)
			return
		}
		*ok = true
	}
	set(&m.v2Memory, ctlMemory, ReasonMemory)
	set(&m.v2Pids, ctlPids, ReasonPids)
	set(&m.v2CPU, ctlCPU, ReasonCPU)
	if m.v2Memory {
		m.v2Swap = exists(filepath.Join(m.inst.v2, "memory.swap.max"))
	}
}

// enableV2 enables one controller on the path base → <Name> → <Instance>.
func (m *Manager) enableV2(base, ctl string) error {
	for _, d := range []string{base, m.parent.v2, m.inst.v2} {
		err := writeFile(d, "cgroup.subtree_control", "+"+ctl)
		if err != nil && d == base && errors.Is(err, unix.EBUSY) {
			// "No internal processes": the supervisor's own cgroup holds
			// processes, so it cannot distribute controllers.
			if !m.opts.MoveSelfV2 {
				return fmt.Errorf("%w (the supervisor's cgroup %s holds processes; delegate an empty parent or set Options.MoveSelfV2)", err, base)
			}
			if merr := m.moveSelfV2(base); merr != nil {
				return fmt.Errorf("%w; moving the supervisor to a leaf: %v", err, merr)
			}
			err = writeFile(d, "cgroup.subtree_control", "+"+ctl)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// moveSelfV2 moves the supervisor process (all its threads) into the leaf
// <base>/<Name>.self, which empties base so it may enable controllers.
func (m *Manager) moveSelfV2(base string) error {
	leaf := filepath.Join(base, m.opts.Name+".self")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		return fmt.Errorf("limits: create %s: %w", leaf, err)
	}
	return writeFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid()))
}
