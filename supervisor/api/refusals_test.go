package api

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
)

// TestRefusalTableMatchesDocs: docs/fencing.md's table of refusals is
// what the engine and the API do: each refusal's code (Refusal.Code), its
// exit status and retry hint (the code's row of the error table), and its
// HTTP status (refusalStatus), each refusal once.
func TestRefusalTableMatchesDocs(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "fencing.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]fencing.Refusal{}
	for _, r := range fencing.Refusals {
		names[strings.ReplaceAll(string(r), "_", " ")] = r
	}
	documented := map[fencing.Refusal]bool{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "## Refusals":
			in = true
			continue
		case in && strings.HasPrefix(line, "## "):
			in = false
		}
		if !in || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| refusal ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 5 {
			t.Errorf("row %q: %d cells, want 5", line, len(cells))
			continue
		}
		r, ok := names[cells[0]]
		if !ok {
			t.Errorf("%q: no such refusal", cells[0])
			continue
		}
		if documented[r] {
			t.Errorf("%s: documented twice", r)
		}
		documented[r] = true
		code := r.Code()
		exit, _ := strconv.Atoi(cells[3])
		status, _ := strconv.Atoi(cells[4])
		if cells[2] != "`"+string(code)+"`" || exit != protocol.ExitCode(code) || status != refusalStatus(r) {
			t.Errorf("%s: docs say %v, the code %s, exit %d, HTTP %d", r, cells[2:], code, protocol.ExitCode(code), refusalStatus(r))
		}
		pe := fencing.ProtocolError(&fencing.Error{Refusal: r, Message: "x"})
		if pe.Code != code || pe.Retryable != code.Retryable() {
			t.Errorf("%s: answered as %+v, the table says retryable %v", r, pe, code.Retryable())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range fencing.Refusals {
		if !documented[r] {
			t.Errorf("%s: not in docs/fencing.md's table", r)
		}
	}
}
