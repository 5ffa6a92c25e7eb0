package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// serve --config FILE: serve's flags in one YAML file, a mapping of flag
// names (without the dashes) to values written as on the command line:
//
//	slots: 4
//	isolation: required
//	default-memory: 256MiB
//	metrics-listen: 127.0.0.1:9464
//
// Each value is read by the flag's own parser, from the scalar's text as
// written (YAML's types do not apply: "host-id: 010" is the string 010),
// so the file accepts exactly what the flags accept and says the same
// when it does not. A flag given on the command line wins over the file.
// The whole file is checked before anything starts, every value included
// (one the command line overrides too, so that removing the flag later
// does not uncover a bad line): an unknown key, a value of the wrong
// shape or one its flag refuses is a usage error (code usage, exit 2)
// naming the file, the line and the key. docs/supervisor.md, "The
// configuration file".

// maxConfigBytes bounds the file: serve's flags take a few hundred bytes,
// so anything near this is not a configuration file.
const maxConfigBytes = 64 << 10

// configExcluded are flags of serve that have no place in its file.
var configExcluded = map[string]string{
	"config": "a configuration file does not name another",
	"help":   "help is not a setting",
}

// configProblem is one line of the file that cannot be used.
type configProblem struct {
	line int
	key  string
	msg  string
}

// configError is every problem of one file, each on its own line.
type configError struct {
	path     string
	problems []configProblem
}

func (e *configError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--config %s: ", e.path)
	for i, p := range e.problems {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "line %d", p.line)
		if p.key != "" {
			fmt.Fprintf(&b, ": %s", p.key)
		}
		fmt.Fprintf(&b, ": %s", p.msg)
	}
	return b.String()
}

// configSetting is one key of the file and its value's text.
type configSetting struct {
	line  int
	name  string
	value string
}

// applyServeConfig reads path and sets, on serve's flags (cmd's, its
// inherited ones included), each setting the command line did not.
func applyServeConfig(cmd *cobra.Command, path string) error {
	settings, err := readServeConfig(path)
	if err != nil {
		return err
	}
	fs := cmd.Flags()
	given := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = true })
	for _, s := range settings {
		if given[s.name] {
			continue
		}
		if err := fs.Set(s.name, s.value); err != nil {
			// Accepted by the same flag on the scratch set already.
			return &usageError{msg: (&configError{path: path, problems: []configProblem{{s.line, s.name, err.Error()}}}).Error()}
		}
	}
	return nil
}

// readServeConfig parses the file into settings, checking their keys
// against serve's flags and their shapes against the flags' types.
func readServeConfig(path string) ([]configSetting, error) {
	// Without blocking: a FIFO would hold the open until a writer came.
	// A symlink is followed (unlike protocol.ReadLocalFile's inputs):
	// files under /etc often are one, put there by a configuration tool.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, usagef("--config %s: %v", path, unwrapPath(err))
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, usagef("--config %s: not a regular file", path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, usagef("--config %s: read: %v", path, unwrapPath(err))
	}
	if len(raw) > maxConfigBytes {
		return nil, usagef("--config %s: larger than %d bytes: not a configuration file", path, maxConfigBytes)
	}
	return parseServeConfig(path, raw, serveFlagSet())
}

// parseServeConfig reads raw and checks every setting on scratch, a fresh
// set of serve's flags: its key is one of them, its value has the shape
// of the flag's and the flag takes it. Every value is checked, one the
// command line overrides too, so that removing the flag later does not
// uncover a bad line; every problem of the file is said at once.
func parseServeConfig(path string, raw []byte, scratch *pflag.FlagSet) ([]configSetting, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty, or comments only
		}
		return nil, usagef("--config %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, usagef("--config %s: line %d: a second document: the file is one mapping of settings", path, extra.Line)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, usagef("--config %s: line %d: want a mapping of serve's flags to values (slots: 4), not %s", path, m.Line, nodeKind(m))
	}
	bad := &configError{path: path}
	seen := map[string]int{}
	var settings []configSetting
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			bad.problems = append(bad.problems, configProblem{k.Line, "", "a key must be a flag's name"})
			continue
		}
		name := k.Value
		if why, ok := configExcluded[name]; ok {
			bad.problems = append(bad.problems, configProblem{k.Line, name, "not allowed here: " + why})
			continue
		}
		flag := scratch.Lookup(name)
		if flag == nil {
			msg := "unknown key: serve has no flag --" + name
			if t := strings.TrimPrefix(name, "--"); t != name && scratch.Lookup(t) != nil {
				msg = fmt.Sprintf("unknown key: write %s without the dashes", t)
			}
			bad.problems = append(bad.problems, configProblem{k.Line, name, msg})
			continue
		}
		if first, dup := seen[name]; dup {
			bad.problems = append(bad.problems, configProblem{k.Line, name, fmt.Sprintf("set twice (first on line %d)", first)})
			continue
		}
		seen[name] = k.Line
		if msg := checkScalar(v, flag.Value.Type()); msg != "" {
			bad.problems = append(bad.problems, configProblem{v.Line, name, msg})
			continue
		}
		// The flag's own parser, without pflag's "invalid argument for
		// flag" around its message.
		if err := flag.Value.Set(v.Value); err != nil {
			bad.problems = append(bad.problems, configProblem{v.Line, name, fmt.Sprintf("%q: %v", v.Value, err)})
			continue
		}
		settings = append(settings, configSetting{line: v.Line, name: name, value: v.Value})
	}
	if len(bad.problems) > 0 {
		return nil, &usageError{msg: bad.Error()}
	}
	return settings, nil
}

// checkScalar says what is wrong with v as the value of a flag of type
// typ, or "".
func checkScalar(v *yaml.Node, typ string) string {
	switch {
	case v.Kind == yaml.AliasNode:
		return "wrong type: an alias; write the value"
	case v.Kind != yaml.ScalarNode:
		return "wrong type: " + nodeKind(v) + "; want one value, as on the command line"
	case v.Tag == "!!null":
		return "no value (remove the line for the default)"
	case typ == "bool" && v.Tag != "!!bool":
		return fmt.Sprintf("wrong type: %q: want true or false", v.Value)
	}
	return ""
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a single value"
}

// newScratchRoot is newRootCmd, set in init: serve's own constructor
// reaches this file, so a direct reference would make commandGroups
// depend on itself.
var newScratchRoot func(*app) *cobra.Command

func init() { newScratchRoot = newRootCmd }

// serveFlagSet is a fresh set of serve's flags and the global ones, as a
// scratch copy to check a file's values on.
func serveFlagSet() *pflag.FlagSet {
	root := newScratchRoot(newApp(context.Background(), nil, io.Discard, io.Discard))
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		panic("no serve command: " + err.Error())
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	add := func(f *pflag.Flag) {
		if _, excluded := configExcluded[f.Name]; !excluded {
			fs.AddFlag(f)
		}
	}
	serve.LocalFlags().VisitAll(add)
	root.PersistentFlags().VisitAll(add)
	return fs
}

// unwrapPath drops the *PathError's own repetition of the path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// withConfig says, on a usage error of the flags' combination, that some
// of them came from the file.
func withConfig(err error, path string) error {
	var ue *usageError
	if path == "" || !errors.As(err, &ue) {
		return err
	}
	return &usageError{msg: ue.msg + " (the flags and --config " + path + " together)"}
}
