package protocol

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
)

// wrappedBundle fixes the key order, and so the bytes, of a wrapped raw
// formula.
type wrappedBundle struct {
	Name       string     `json:"name"`
	Version    string     `json:"version"`
	TargetVM   string     `json:"target_vm"`
	TargetOS   *string    `json:"target_os"`
	Assembly   string     `json:"assembly"`
	EntryPoint string     `json:"entry_point"`
	Functions  []struct{} `json:"functions"`
	Cost       struct{}   `json:"cost"`
	SourceHash string     `json:"source_hash"`
}

// WrapNox wraps a raw .nox formula into a minimal ProgramBundle, the way Joy
// accepts raw formulas: the name is the file stem of name (directory and
// extension dropped), version and entry point are empty, the assembly is src
// unchanged. The result is compact JSON with a fixed key order and no
// trailing newline, so the same file always wraps to the same bytes; those
// bytes are what a job freezes. source_hash is left empty: it is never
// authority, and an empty value claims nothing.
//
// src must parse under the public profile's bounds, so that a wrapped
// bundle is always admissible as far as its program goes.
func WrapNox(name string, src []byte) ([]byte, error) {
	if len(src) > MaxAssemblyBytes {
		return nil, Errorf(CodeInvalidJob, "formula: %d bytes, at most %d", len(src), MaxAssemblyBytes)
	}
	if _, err := parseAssembly(string(src)); err != nil {
		return nil, err
	}
	base := filepath.Base(name)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	if base == "." || base == string(filepath.Separator) {
		stem = ""
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// The assembly is digits, brackets and whitespace; HTML escaping would
	// only make names harder to read.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wrappedBundle{
		Name:      stem,
		TargetVM:  "nox",
		Assembly:  string(src),
		Functions: []struct{}{},
	}); err != nil {
		return nil, Errorf(CodeInternalError, "wrapping a formula: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
