package limits

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// RemoveLeftovers kills every process in, and removes, the groups of other
// instances (earlier boots) under the parent group <Name>, bottom-up, in
// every hierarchy (also ones this instance does not use, such as the
// freezer of a boot that had no cgroup.kill). It returns the removed groups
// as "<Name>/<instance>[/<attempt>...]". The current instance is never
// touched. Call it once at start, before creating groups.
func (m *Manager) RemoveLeftovers(ctx context.Context) ([]string, error) {
	parent := m.parentAll()
	instances := map[string]bool{}
	var errs []error
	for _, d := range parent.all() {
		ents, err := os.ReadDir(d)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("limits: list leftovers in %s: %w", d, err))
			}
			continue
		}
		for _, e := range ents {
			if e.IsDir() && e.Name() != m.opts.Instance {
				instances[e.Name()] = true
			}
		}
	}
	names := make([]string, 0, len(instances))
	for n := range instances {
		names = append(names, n)
	}
	sort.Strings(names)

	seen := map[string]bool{}
	for _, inst := range names {
		node := parent.join(inst)
		var found []string
		for i, d := range node.all() {
			for _, sub := range subtree(d) {
				if rel, err := filepath.Rel(parent.all()[i], sub); err == nil {
					found = append(found, filepath.Join(m.opts.Name, rel))
				}
			}
		}
		t := killTarget{v2: node.v2, cgroupKill: node.v2 != "" && exists(filepath.Join(node.v2, "cgroup.kill")), v1: node.v1(), freezer: node.freezer}
		if _, err := t.kill(ctx); err != nil {
			errs = append(errs, fmt.Errorf("limits: leftover %s: %w", inst, err))
			continue
		}
		var rmErr error
		for _, d := range node.all() {
			rmErr = errors.Join(rmErr, removeTree(d))
		}
		if rmErr != nil {
			errs = append(errs, fmt.Errorf("limits: leftover %s: %w", inst, rmErr))
			continue
		}
		for _, f := range found {
			seen[f] = true
		}
	}
	removed := make([]string, 0, len(seen))
	for f := range seen {
		removed = append(removed, f)
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// Close kills whatever is still running in this instance's groups, removes
// them and the instance's parent group, and the <Name> group if no other
// instance uses it. Groups created by this Manager become deleted. Close is
// idempotent; the Manager cannot create groups afterwards.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	groups := make([]*Group, 0, len(m.groups))
	for g := range m.groups {
		groups = append(groups, g)
	}
	m.mu.Unlock()

	var errs []error
	if !m.inst.empty() {
		if _, err := m.killTarget(m.inst).kill(ctx); err != nil {
			errs = append(errs, fmt.Errorf("limits: close: %w", err))
		}
	}
	for _, g := range groups {
		g.mu.Lock()
		if !g.deleted {
			if g.outcome == nil {
				if o, err := g.result(); err == nil {
					g.outcome = &o
				}
			}
			g.release()
		}
		g.mu.Unlock()
	}
	for _, d := range m.inst.all() {
		if err := removeTree(d); err != nil {
			errs = append(errs, fmt.Errorf("limits: close: %w", err))
		}
	}
	for _, d := range m.parent.all() {
		_ = rmdirIfEmpty(d) // other instances may still live there
	}
	return errors.Join(errs...)
}
