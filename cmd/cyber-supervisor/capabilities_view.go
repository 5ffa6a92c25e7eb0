package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/limits"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// capabilitiesView is what the human form of `capabilities` reads of the
// daemon's reply (api.CapabilitiesReply, whose host probe is any there);
// --format json prints the reply itself.
type capabilitiesView struct {
	Capabilities json.RawMessage `json:"capabilities"`
	Limits       apitypes.Limits `json:"limits"`
	Host         *struct {
		Isolation string `json:"isolation"`
		Probe     struct {
			CgroupMode     string            `json:"cgroup_mode"`
			CgroupCreate   bool              `json:"cgroup_create"`
			WallClock      bool              `json:"wall_clock"`
			LandlockABI    int               `json:"landlock_abi"`
			TreeKillMethod string            `json:"tree_kill_method"`
			Reasons        map[string]string `json:"reasons"`
		} `json:"probe"`
	} `json:"host"`
}

type enforcedItem struct {
	on           bool
	name, reason string
	// note is said after the name only where the limit is enforced.
	note string
}

// enforcedList is the enforced limits in the order they are listed,
// each with how the human form says it and the probe's reason that says
// why it is not enforced (limits.Reason*). limits.cpu is a CPU quota the
// cgroup could hold, which no job of this contract version asks for
// (docs/supervisor.md, "What each mode enforces").
func enforcedList(l protocol.EnforcedLimits) []enforcedItem {
	return []enforcedItem{
		{l.Memory, "memory", "memory", ""}, {l.Pids, "processes", "pids", ""}, {l.CPU, "cpu quota", "cpu", " (possible, none set)"},
		{l.WallTime, "wall time", "wall_clock", ""}, {l.Cancellation, "cancellation", "wall_clock", ""},
		{l.Reductions, "reductions", "", ""}, {l.ArtifactBytes, "artifact size", "", ""},
	}
}

// printCapabilities is the human form of a capabilities reply: what is
// enforced, and for what is not, the probe's reason.
func printCapabilities(w io.Writer, raw []byte) error {
	var v capabilitiesView
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("decode the daemon's capabilities: %w", err)
	}
	c, err := protocol.ParseCapabilities(v.Capabilities)
	if err != nil {
		return fmt.Errorf("decode the daemon's capabilities: %w", err)
	}
	ops := make([]string, len(c.Operations))
	for i, op := range c.Operations {
		ops[i] = string(op)
	}
	fmt.Fprintf(w, "backend       %s %s (%s), vm %s\n", c.Backend, c.BackendVersion, strings.Join(c.Contracts, ", "), c.VM)
	fmt.Fprintf(w, "operations    %s (proofs: %s)\n", strings.Join(ops, ", "), orNone(c.ProofKinds))
	var reasons map[string]string
	if h := v.Host; h != nil {
		reasons = h.Probe.Reasons
		line := h.Isolation
		if h.Isolation == "isolated" {
			line += fmt.Sprintf(": namespaces, seccomp, Landlock ABI %d", h.Probe.LandlockABI)
		}
		if h.Probe.CgroupMode != "" {
			line += ", cgroups " + h.Probe.CgroupMode
			if !h.Probe.CgroupCreate {
				line += " (not usable)"
			}
		}
		switch {
		case h.Probe.TreeKillMethod != "":
			line += ", deadline kill by " + h.Probe.TreeKillMethod
		case h.Probe.WallClock:
			// No tree kill: a deadline or a cancel's last step kills the
			// worker process and its process group (reasons.wall_clock).
			line += ", deadline kill of the worker's process and process group"
		}
		fmt.Fprintf(w, "isolation     %s\n", line)
	}
	var on, off []string
	for _, l := range enforcedList(c.Limits) {
		if l.on {
			on = append(on, l.name+l.note)
			continue
		}
		why := reasons[l.reason]
		if why == "" {
			why = reasons["cgroups"]
		}
		if why == "" {
			why = "not offered by this host"
		}
		off = append(off, l.name+": "+followReason(why, reasons))
	}
	fmt.Fprintf(w, "enforced      %s\n", orNone(on))
	for i, o := range off {
		label := ""
		if i == 0 {
			label = "not enforced"
		}
		fmt.Fprintf(w, "%-13s %s\n", label, o)
	}
	l := v.Limits
	if l.MemoryEnforced {
		fmt.Fprintf(w, "job memory    default %s, from %s to %s\n", approxBytes(l.DefaultMemoryBytes), approxBytes(l.MinMemoryBytes), approxBytes(l.MaxMemoryBytes))
	}
	fmt.Fprintf(w, "job time      default %s, at most %s\n", msDuration(l.DefaultWallTimeMS), msDuration(l.MaxWallTimeMS))
	fmt.Fprintf(w, "job retries   default %d (a job that asks for none); a shutdown's interruption is retried whatever the policy\n", l.DefaultRetries)
	return nil
}

// followReason resolves the probe's pointer from one reason to another
// by its JSON key ("no usable cgroups (see reasons.cgroups)"), which a
// person reading this form cannot follow: the reason pointed to is said
// in its place.
func followReason(why string, reasons map[string]string) string {
	ref := limits.SeeReason
	i := strings.Index(why, ref)
	if i < 0 {
		return why
	}
	key, rest, ok := strings.Cut(why[i+len(ref):], ")")
	target := reasons[key]
	if !ok || target == "" || strings.Contains(target, ref) {
		return strings.Replace(why, ref, "(see ", 1)
	}
	return why[:i] + "(" + key + ": " + target + ")" + rest
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func msDuration(ms uint64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// approxBytes is n in the largest binary unit it reaches, to a tenth
// ("23.6GiB"): for reading; formatBytes is exact.
func approxBytes(n uint64) string {
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult {
			return strings.TrimSuffix(strconv.FormatFloat(float64(n)/float64(u.mult), 'f', 1, 64), ".0") + u.suffix
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}
