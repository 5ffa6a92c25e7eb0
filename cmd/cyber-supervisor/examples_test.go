package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasExamples walks the whole command tree: every
// runnable command has two or three examples, each a "# comment" line and
// an invocation, and each invocation is one this binary accepts: it
// starts with cyber-supervisor, names only files of examples/ that exist,
// names the command it is the example of (a command of subcommands may
// show its subcommands instead), and that command's flags, required
// flags, flag groups and positional arguments take it.
func TestEveryCommandHasExamples(t *testing.T) {
	seen := map[string]bool{}
	walkCommands(newExampleRoot(), func(c *cobra.Command) {
		path := commandPath(c)
		seen[path] = true
		if !c.Runnable() {
			return
		}
		name := "cyber-supervisor " + path
		if c.Example == "" {
			t.Errorf("%s: no Example (add one to commandExamples in examples.go)", name)
			return
		}
		invocations, err := exampleInvocations(c.Example)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if n := len(invocations); n < 2 || n > 3 {
			t.Errorf("%s: %d examples, want two or three", name, n)
		}
		for _, line := range invocations {
			if err := checkExample(path, c.HasSubCommands(), line); err != nil {
				t.Errorf("%s: example %q: %v", name, line, err)
			}
		}
	})
	for path := range commandExamples {
		if !seen[path] {
			t.Errorf("commandExamples[%q] names no command", path)
		}
	}
}

// newExampleRoot is a fresh command tree: parsing flags changes them, so
// every example gets a tree of its own.
func newExampleRoot() *cobra.Command {
	return newRootCmd(newApp(context.Background(), nil, io.Discard, io.Discard))
}

func walkCommands(c *cobra.Command, visit func(*cobra.Command)) {
	if c.Hidden || c.Deprecated != "" {
		return
	}
	visit(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, visit)
	}
}

// exampleInvocations checks an Example's layout (every line indented by
// two spaces, every invocation right after its own one-line comment) and
// returns its invocations.
func exampleInvocations(example string) ([]string, error) {
	var invocations []string
	commented := false
	for i, line := range strings.Split(example, "\n") {
		text, ok := strings.CutPrefix(line, "  ")
		if !ok || text == "" || strings.HasPrefix(text, " ") {
			return nil, fmt.Errorf("line %d %q: want two spaces of indent, then text", i+1, line)
		}
		if strings.HasPrefix(text, "#") {
			if commented {
				return nil, fmt.Errorf("line %d: two comments in a row", i+1)
			}
			commented = true
			continue
		}
		if !commented {
			return nil, fmt.Errorf("line %d %q: no # comment before it says what it does", i+1, text)
		}
		commented = false
		invocations = append(invocations, text)
	}
	if commented {
		return nil, fmt.Errorf("ends with a comment")
	}
	return invocations, nil
}

// checkExample parses line as cobra would run it: the words of its first
// simple command, found from the root, then the flags and the arguments.
func checkExample(path string, group bool, line string) error {
	words, err := shellWords(line)
	if err != nil {
		return err
	}
	if len(words) == 0 || words[0] != "cyber-supervisor" {
		return fmt.Errorf("does not start with cyber-supervisor")
	}
	// A file of the repository's examples/ must exist: the examples are
	// meant to be copied from a checkout.
	for _, w := range words {
		if strings.HasPrefix(w, "examples/") {
			if _, err := os.Stat(filepath.Join("..", "..", w)); err != nil {
				return fmt.Errorf("names a missing example file: %w", err)
			}
		}
	}
	root := newExampleRoot()
	target, flags, err := root.Find(words[1:])
	if err != nil {
		return fmt.Errorf("find: %w", err)
	}
	got := commandPath(target)
	if got != path && !(group && strings.HasPrefix(got, path+" ")) {
		return fmt.Errorf("runs %q, not %q", target.CommandPath(), "cyber-supervisor "+path)
	}
	if err := target.ParseFlags(flags); err != nil {
		return fmt.Errorf("flags: %w", err)
	}
	if err := target.ValidateRequiredFlags(); err != nil {
		return err
	}
	if err := target.ValidateFlagGroups(); err != nil {
		return err
	}
	if err := target.ValidateArgs(target.Flags().Args()); err != nil {
		return fmt.Errorf("arguments %q: %w", target.Flags().Args(), err)
	}
	return nil
}

// shellWords splits the first simple command of line as sh would split
// its words: blanks separate, single quotes keep everything, double
// quotes keep all but backslash escapes, a backslash escapes the next
// character; an unquoted |, &, ;, < or > ends the command (what follows
// is a redirection or another command). Expansions are left as written.
func shellWords(line string) ([]string, error) {
	var (
		words   []string
		word    strings.Builder
		inWord  bool
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range line {
		switch {
		case escaped:
			word.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\\':
			escaped, inWord = true, true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case strings.ContainsRune("|&;<>", r):
			if inWord {
				words = append(words, word.String())
			}
			return words, nil
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote or escape")
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  bool
	}{
		{line: "a  b\tc", want: []string{"a", "b", "c"}},
		{line: `a --acts ''`, want: []string{"a", "--acts", ""}},
		{line: `a --failed "no line" x`, want: []string{"a", "--failed", "no line", "x"}},
		{line: `a 'it''s' "x\"y" z\ w`, want: []string{"a", "its", `x"y`, "z w"}},
		{line: `a b > "${fpath[1]}/_x"`, want: []string{"a", "b"}},
		{line: "serve &", want: []string{"serve"}},
		{line: "a|b", want: []string{"a"}},
		{line: `a "b`, err: true},
		{line: `a b\`, err: true},
	} {
		got, err := shellWords(tc.line)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q, error %v", tc.line, got, err, tc.want, tc.err)
		}
	}
}
