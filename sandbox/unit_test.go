package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "worker")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	work, sock, jail := mk(t, dir, "work"), mk(t, dir, "s"), mk(t, dir, "root")
	good := Config{Mode: ModeIsolated, WorkerPath: bin, GatePath: bin, WorkDir: work, SocketDir: sock, JailRoot: jail}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	plain := Config{Mode: ModeUnisolated, WorkerPath: bin, SocketDir: sock}
	if err := plain.Validate(); err != nil {
		t.Fatalf("good unisolated config: %v", err)
	}

	cases := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"mode unset", func(c *Config) { c.Mode = 0 }, "Mode"},
		{"relative worker", func(c *Config) { c.WorkerPath = "worker" }, "WorkerPath"},
		{"missing worker", func(c *Config) { c.WorkerPath = bin + "x" }, "WorkerPath"},
		{"worker not executable", func(c *Config) { c.WorkerPath = noexec }, "not executable"},
		{"worker is a dir", func(c *Config) { c.WorkerPath = dir }, "not a regular file"},
		{"no work dir", func(c *Config) { c.WorkDir = "" }, "WorkDir"},
		{"unclean socket dir", func(c *Config) { c.SocketDir = sock + "/../s" }, "SocketDir"},
		{"long socket dir", func(c *Config) { c.SocketDir = "/" + strings.Repeat("x", 100) }, "SocketDir"},
		{"no jail root", func(c *Config) { c.JailRoot = "" }, "JailRoot"},
		{"jail root is /", func(c *Config) { c.JailRoot = "/" }, "JailRoot"},
		{"work inside jail root", func(c *Config) { c.JailRoot = dir }, "inside JailRoot"},
		{"namespaces without mnt", func(c *Config) { c.Namespaces = NamespacePID }, "pid and mnt"},
		{"unknown namespace bits", func(c *Config) { c.Namespaces = 1 << 20 }, "unknown bits"},
		{"reserved env", func(c *Config) { c.Env = []string{"PLUGIN_X=1"} }, "reserved"},
		{"env without =", func(c *Config) { c.Env = []string{"FOO"} }, "KEY=VALUE"},
		{"NUL in arg", func(c *Config) { c.Args = []string{"a\x00b"} }, "NUL"},
		{"bad pass env", func(c *Config) { c.PassEnv = []string{"A=B"} }, "PassEnv"},
		{"tiny nofile", func(c *Config) { c.Rlimits.NoFile = 3 }, "NoFile"},
		{"negative tmpfs", func(c *Config) { c.TmpfsBytes = -1 }, "TmpfsBytes"},
		{"negative timeout", func(c *Config) { c.StartTimeout = -1 }, "StartTimeout"},
		{"bad hostname", func(c *Config) { c.Hostname = "a b" }, "Hostname"},
		{"bad landlock", func(c *Config) { c.Landlock = 7 }, "Landlock"},
		// The C gate is the one init (no worker as its own init).
		{"isolated without a gate", func(c *Config) { c.GatePath = "" }, "GatePath"},
		{"gate not executable", func(c *Config) { c.GatePath = noexec }, "GatePath"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mut(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
	unisolated := []struct {
		name string
		mut  func(*Config)
	}{
		{"namespaces", func(c *Config) { c.Namespaces = DefaultNamespaces }},
		{"jail", func(c *Config) { c.JailRoot = jail }},
		{"runas", func(c *Config) { c.RunAs = &Identity{} }},
		{"seccomp", func(c *Config) { c.Seccomp = true }},
		{"landlock", func(c *Config) { c.Landlock = LandlockRequired }},
		// Limits apply before the worker runs, through the gate.
		{"rlimits without a gate", func(c *Config) { c.Rlimits = Rlimits{NoFile: 100} }},
	}
	for _, tc := range unisolated {
		t.Run("unisolated "+tc.name, func(t *testing.T) {
			c := plain
			tc.mut(&c)
			if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
			}
		})
	}
	if _, err := New(Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New(zero) = %v", err)
	}
}

func mk(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWorkerEnv(t *testing.T) {
	in := []string{
		"HOME=/root", "PATH=/usr/bin", "SECRET=1",
		"COOKIE=abc", "PLUGIN_MIN_PORT=1", "PLUGIN_UNIX_SOCKET_DIR=/tmp/s/plugin-dir1",
		"PLUGIN_UNIX_SOCKET_GROUP=wheel", "PLUGIN_MIN_PORT=2", "garbage", "=x",
	}
	got := strings.Join(workerEnv(in, []string{"COOKIE"}, []string{"EXTRA=1"}, true), " ")
	want := "COOKIE=abc PLUGIN_MIN_PORT=2 PLUGIN_UNIX_SOCKET_DIR=/run/plugin EXTRA=1"
	if got != want {
		t.Errorf("jailed env\n got %s\nwant %s", got, want)
	}
	got = strings.Join(workerEnv(in, nil, nil, false), " ")
	want = "PLUGIN_MIN_PORT=2 PLUGIN_UNIX_SOCKET_DIR=/tmp/s/plugin-dir1 PLUGIN_UNIX_SOCKET_GROUP=wheel"
	if got != want {
		t.Errorf("plain env\n got %s\nwant %s", got, want)
	}
}
