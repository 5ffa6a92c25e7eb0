package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Of the neuron, prog and act commands only neuron init makes a home:
// every other one, the read-only ones first, answers no_store (exit 2)
// on a home with no store (a mistyped --home) and makes nothing there, as
// gc and store check do (TestMaintenanceMakesNoHome). Every command of
// the group is in one of the two lists, so a new one has to be placed.
func TestFencingCommandsMakeNoHome(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the binary for every fencing command")
	}
	dir := t.TempDir()
	prog := writeFile(t, dir, "add.nox", add)
	policy := strings.Repeat("ab", 32)
	readOnly := map[string][]string{
		"neuron show":     {"neuron", "show"},
		"grant show":      {"grant", "show"},
		"placement show":  {"placement", "show"},
		"prog list":       {"prog", "list"},
		"prog show":       {"prog", "show", "abcdef"},
		"invocation list": {"invocation", "list"},
		"invocation show": {"invocation", "show", "abcdef"},
		"operation list":  {"operation", "list"},
	}
	// Writes that need a record only a store holds (the neuron's root, a
	// prog, an invocation): on a home with no store they could only fail.
	writes := map[string][]string{
		"neuron policy":       {"neuron", "policy", "--policy", policy, "--epoch", "2"},
		"grant set":           {"grant", "set", "--revision", "0", "--acts", "emit"},
		"placement bind":      {"placement", "bind", "--generation", "0"},
		"placement release":   {"placement", "release", "--generation", "0"},
		"prog install":        {"prog", "install", prog, "--acts", "emit"},
		"prog upgrade":        {"prog", "upgrade", "abcdef", prog, "--revision", "1"},
		"prog pause":          {"prog", "pause", "abcdef"},
		"prog resume":         {"prog", "resume", "abcdef"},
		"prog retire":         {"prog", "retire", "abcdef"},
		"invoke":              {"invoke", "abcdef"},
		"invocation cancel":   {"invocation", "cancel", "abcdef"},
		"invocation archive":  {"invocation", "archive", "abcdef"},
		"invocation rebind":   {"invocation", "rebind", "abcdef"},
		"operation take":      {"operation", "take", "abcdef"},
		"operation reconcile": {"operation", "reconcile", "abcdef", "--attempt", "1", "--value", "7"},
	}
	var missing []string
	root := newRootCmd(newApp(context.Background(), nil, io.Discard, io.Discard))
	var walk func(c *cobra.Command, group string)
	walk = func(c *cobra.Command, group string) {
		if c.GroupID != "" {
			group = c.GroupID
		}
		if group == groupFencing && c.Runnable() && !c.HasSubCommands() {
			name := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
			if _, ok := readOnly[name]; !ok && writes[name] == nil && name != "neuron init" {
				missing = append(missing, name)
			}
		}
		for _, s := range c.Commands() {
			walk(s, group)
		}
	}
	walk(root, "")
	if sort.Strings(missing); len(missing) > 0 {
		t.Fatalf("commands of the group in neither list: %v", missing)
	}

	refuses := func(home string, args []string, made func() bool) {
		t.Helper()
		want := "no store at " + filepath.Join(home, "store", "supervisor.db")
		env := jsonRun(t, protocol.ExitUsage, append([]string{"--home", home}, args...)...)
		if env.Error == nil || env.Error.Code != protocol.CodeNoStore || !strings.Contains(env.Error.Message, want) || env.Error.Retryable {
			t.Errorf("%v: %+v, want no_store naming %s", args, env.Error, want)
		}
		r := cli(t, append([]string{"--home", home}, args...)...)
		if r.code != protocol.ExitUsage || !strings.Contains(r.stderr, "no_store: "+want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
		if made() {
			t.Fatalf("%v made the home %s", args, home)
		}
	}
	// A home that is not there, and one that is an empty directory.
	typo := filepath.Join(dir, "typo")
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	noHome := func() bool { _, err := os.Lstat(typo); return !os.IsNotExist(err) }
	stillEmpty := func() bool { ents, err := os.ReadDir(empty); return err != nil || len(ents) > 0 }
	for _, m := range []map[string][]string{readOnly, writes} {
		for _, args := range m {
			refuses(typo, args, noHome)
			refuses(empty, args, stillEmpty)
		}
	}

	// neuron init still makes a fresh home, and the others work on it.
	if env := jsonRun(t, 0, "--home", typo, "neuron", "init", "--network", "testnet"); !env.OK {
		t.Fatalf("neuron init on a fresh home: %+v", env.Error)
	}
	if _, err := os.Stat(filepath.Join(typo, "store", "supervisor.db")); err != nil {
		t.Fatalf("neuron init made no store: %v", err)
	}
	for _, c := range []string{"neuron show", "grant show", "placement show", "prog list", "invocation list", "operation list"} {
		jsonRun(t, 0, append([]string{"--home", typo}, readOnly[c]...)...)
	}
}
