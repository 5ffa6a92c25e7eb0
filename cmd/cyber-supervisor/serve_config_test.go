package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// A configuration file that cannot be used stops serve with a usage
// error (exit 2, code usage) naming the file, the line and the key of
// each problem, before the home is made, a store opened or a socket
// bound. Fails before serve --config: an unknown flag.
func TestServeConfigRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, file string
		extra      []string
		want       []string
	}{
		{"unknown key", "slots: 1\nfrobnicate: 3\n", nil, []string{"line 2: frobnicate: unknown key: serve has no flag --frobnicate"}},
		{"dashes", "--pool: 1\n", nil, []string{"line 1: --pool: unknown key: write pool without the dashes"}},
		{"bad value", "isolation: sometimes\n", nil, []string{`line 1: isolation: "sometimes": "sometimes" is not one of auto, required, off`}},
		{"bad size", "# limits\n\ndefault-memory: 64Q\n", nil, []string{`line 3: default-memory: "64Q"`}},
		{"bad duration", "api-idle-timeout: soon\n", nil, []string{`line 1: api-idle-timeout: "soon"`}},
		{"a list", "slots:\n  - 1\n  - 2\n", nil, []string{"line 2: slots: wrong type: a list"}},
		{"a mapping", "store: {url: x}\n", nil, []string{"line 1: store: wrong type: a mapping"}},
		{"bool as a word", "keep-local-jobs: yes\n", nil, []string{`line 1: keep-local-jobs: wrong type: "yes": want true or false`}},
		{"no value", "slots:\n", nil, []string{"line 1: slots: no value"}},
		{"twice", "slots: 1\nslots: 2\n", nil, []string{"line 2: slots: set twice (first on line 1)"}},
		{"config in config", "config: other.yaml\n", nil, []string{"line 1: config: not allowed here"}},
		{"not a mapping", "- slots\n", nil, []string{"line 1: want a mapping"}},
		{"syntax", "slots: 1\n isolation: off\n", nil, []string{"line 2: "}},
		{"two documents", "slots: 1\n---\nslots: 2\n", nil, []string{"line 2: a second document"}},
		{"every problem at once", "slots: 0\nfrobnicate: 1\npool: [1]\n", nil, []string{"line 1: slots:", "line 2: frobnicate:", "line 3: pool:"}},
		// Checked although the command line overrides it: removing the
		// flag later must not uncover a bad line.
		{"overridden but bad", "slots: 0\n", []string{"--slots", "1"}, []string{`line 1: slots: "0"`}},
		// A combination of the file's and the command line's values.
		{"combination", "pool: 2\n", []string{"--slots", "1"}, []string{"--pool 2: at most the slots (1)", "--config"}},
		{"remote metrics", "metrics-listen: 0.0.0.0:9464\n", nil, []string{"--metrics-listen", "not a loopback address", "--config"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "home")
			file := writeFile(t, dir, strings.ReplaceAll(c.name, " ", "-")+".yaml", c.file)
			r := cli(t, append([]string{"--home", home, "serve", "--config", file, "--isolation", "off"}, c.extra...)...)
			if r.code != protocol.ExitUsage {
				t.Fatalf("exit %d, want %d: %+v", r.code, protocol.ExitUsage, r)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if !strings.Contains(r.stderr, file) {
				t.Errorf("stderr %q does not name the file", r.stderr)
			}
			if _, err := os.Stat(home); !os.IsNotExist(err) {
				t.Errorf("the home was made (%v): serve started before the file was checked", err)
			}
			env := jsonRun(t, protocol.ExitUsage, append([]string{"--home", home, "serve", "--config", file, "--isolation", "off"}, c.extra...)...)
			if env.Error == nil || env.Error.Code != protocol.CodeUsage {
				t.Errorf("envelope %+v", env.Error)
			}
		})
	}
	if r := cli(t, "serve", "--config", filepath.Join(dir, "missing.yaml")); r.code != protocol.ExitUsage || !strings.Contains(r.stderr, "missing.yaml: no such file") {
		t.Errorf("a missing file: %+v", r)
	}
	if r := cli(t, "serve", "--config", dir); r.code != protocol.ExitUsage || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("a directory: %+v", r)
	}
	// A FIFO is refused at once, not waited on for a writer.
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := cli(t, "serve", "--config", fifo); r.code != protocol.ExitUsage || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("a FIFO: %+v", r)
	}
}

// The file's settings apply, the global ones (home, log-format: ready
// reads JSON records) included,
// and a flag on the command line wins over the file. Fails before serve
// --config: an unknown flag.
func TestServeConfigApplies(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	file := writeFile(t, dir, "serve.yaml", `# a daemon for the test
home: `+home+`
isolation: "off"
slots: 3
pool: 0
metrics-listen: 127.0.0.1:0
log-format: json
`)
	// Through a symlink, as a configuration tool often leaves one in /etc.
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, nil, "serve", "--config", link, "--slots", "1")
	ready := d.ready(t)
	if ready["slots"] != float64(1) {
		t.Errorf("slots %v: the command line's 1 did not win over the file's 3", ready["slots"])
	}
	if ready["home"] != home || ready["isolation"] != "unisolated" {
		t.Errorf("home %v, isolation %v: the file's were not applied", ready["home"], ready["isolation"])
	}
	if m, _ := ready["metrics"].(string); !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/metrics$`).MatchString(m) {
		t.Errorf("metrics %q: the file's metrics-listen was not applied", m)
	}
}

// The example in contrib/ is a file serve accepts, and it names every
// setting there is (commented out where the default is shown), so that
// a new flag of serve is documented there too.
func TestServeConfigExample(t *testing.T) {
	path := filepath.Join(repoRoot, "contrib", "serve.yaml")
	if _, err := readServeConfig(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	serveFlagSet().VisitAll(func(f *pflag.Flag) {
		if !regexp.MustCompile(`(?m)^(# )?` + regexp.QuoteMeta(f.Name) + `:`).Match(raw) {
			t.Errorf("contrib/serve.yaml does not show %s", f.Name)
		}
	})
}
