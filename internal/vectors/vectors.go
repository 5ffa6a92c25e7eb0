// Package vectors loads the reference conformance cases of the nox VM
// (testdata/nox-l1-core.jsonl.zst, 7,892 cases taken from the reference
// implementation) for tests and benchmarks.
package vectors

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// SHA256 of the uncompressed corpus, so a damaged copy is noticed.
const corpusSHA256 = "ab88d15fa80efd420b56dc7f653572acaaeb30892edeb9081eba3930345a0790"

// Case is one reference case.
type Case struct {
	ID      string `json:"id"`
	Budget  uint64 `json:"budget"`
	Object  string `json:"object"`
	Formula string `json:"formula"`
	Expect  Expect `json:"expect"`
}

// Expect is the reference outcome.
type Expect struct {
	Status          string  `json:"status"`
	Result          *string `json:"result"`
	Cost            *uint64 `json:"cost"`
	Remaining       *uint64 `json:"remaining"`
	Error           *string `json:"error"`
	ErrorCode       *int    `json:"error_code"`
	ResultParticle  *string `json:"result_particle"`
	ObjectParticle  string  `json:"object_particle"`
	FormulaParticle string  `json:"formula_particle"`
}

// Group is the id prefix: edge, targeted, loops, fuzz or boundary.
func (c Case) Group() string {
	g, _, _ := strings.Cut(c.ID, "-")
	return g
}

// Path is the location of the compressed corpus in the repository.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "nox-l1-core.jsonl.zst")
}

// Load reads every case.
func Load() ([]Case, error) {
	raw, err := os.ReadFile(Path())
	if err != nil {
		return nil, fmt.Errorf("read vectors: %w", err)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	data, err := dec.DecodeAll(raw, nil)
	if err != nil {
		return nil, fmt.Errorf("decompress vectors: %w", err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != corpusSHA256 {
		return nil, fmt.Errorf("vectors: checksum mismatch")
	}
	var cases []Case
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var c Case
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("vectors line %d: %w", len(cases)+1, err)
		}
		cases = append(cases, c)
	}
	return cases, sc.Err()
}

// Group returns the cases whose id starts with prefix + "-".
func Group(cases []Case, prefix string) []Case {
	var out []Case
	for _, c := range cases {
		if c.Group() == prefix {
			out = append(out, c)
		}
	}
	return out
}
