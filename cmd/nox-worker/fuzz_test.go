package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// exitCodes are the statuses the direct commands may end with.
var exitCodes = map[int]bool{
	exitOK: true, exitFailed: true, exitUsage: true, exitUnsupported: true,
	exitRejected: true, exitCancelled: true,
}

// FuzzDirectArgs feeds arbitrary argument lists (NUL-separated) to the
// commands that write nothing (run, verify, describe), with --format json
// in front: the CLI must not panic, must end with a known exit code, and
// must print exactly one envelope that agrees with it. A file named
// "prog.nox", "prog.json", "in.json" or "c.zst" in the arguments refers to
// a fixture.
func FuzzDirectArgs(f *testing.F) {
	for _, s := range []string{
		"run\x00prog.nox\x00--input-values\x003,5",
		"run\x00--budget=2\x00prog.json\x00--input-values\x003,5",
		"run\x00prog.nox\x00--input-file\x00in.json",
		"verify\x00c.zst\x00--claim\x008\x00--program\x00prog.nox",
		"verify\x00c.zst\x00--budget\x001\x00--input-values\x00",
		"describe\x00--format\x00human",
		"run\x00--\x00--format",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	fixtures := map[string]string{
		"prog.nox": "[5 [[0 2] [0 6]]]",
		"in.json":  `{"schema_version":1,"public":[3,5],"secret":[]}`,
	}
	bundle, _ := os.ReadFile(examplePath("add.bundle.json"))
	fixtures["prog.json"] = string(bundle)
	for name, content := range fixtures {
		writeFile(f, dir, name, content)
	}
	certPath := filepath.Join(dir, "c.zst")
	if _, _, code := cliCtx(context.Background(), "prove", filepath.Join(dir, "prog.nox"), "--input-values", "3,5", "--output", certPath); code != exitOK {
		f.Fatal("fixture certificate")
	}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		if len(args) == 0 || (args[0] != "run" && args[0] != "verify" && args[0] != "describe") {
			return
		}
		for i, a := range args {
			if _, ok := fixtures[a]; ok || a == "c.zst" {
				args[i] = filepath.Join(dir, a)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		full := append([]string{args[0], "--format", "json"}, args[1:]...)
		out, _, code := cliCtx(ctx, full...)
		if !exitCodes[code] {
			t.Fatalf("exit %d", code)
		}
		if strings.Contains(joined, "format") {
			return // the fuzzed arguments may have asked for human output
		}
		env := parseEnvelope(t, args[0], out, code)
		if !env.OK && env.Error.Code == protocol.CodeInternalError {
			t.Fatalf("internal error: %+v", env.Error)
		}
	})
}

// FuzzProgramFile feeds arbitrary program files, as .nox and as .json, to
// the run command: a known exit code and one consistent envelope, and a
// usage error whenever the file is refused before the worker runs.
func FuzzProgramFile(f *testing.F) {
	for _, s := range []string{
		"[5 [[0 2] [0 6]]]", "[1 x]", "[8 [0 2]]", "",
		`{"target_vm":"nox","assembly":"[1 0]"}`,
		`{"target_vm":"nox","assembly":"[1 0]","reads_state":true}`,
		`{"target_vm":"nox","assembly":"[1 0]","assembly":"[1 1]"}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content string, asJSON bool) {
		name := "p.nox"
		if asJSON {
			name = "p.json"
		}
		path := writeFile(t, dir, name, content)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, _, code := cliCtx(ctx, "run", path, "--input-values", "3,5", "--budget", "10000", "--format", "json")
		if !exitCodes[code] {
			t.Fatalf("exit %d", code)
		}
		env := parseEnvelope(t, "run", out, code)
		if !env.OK && env.Error.Code == protocol.CodeInternalError {
			t.Fatalf("internal error: %+v", env.Error)
		}
	})
}
