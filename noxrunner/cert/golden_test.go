package cert

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
)

// goldenChain is TestProveMaxMemory's hash chain: every link's digest is
// a new atom, so the table grows with the run.
const goldenChain = "[2 [[3 [[1 [4 [[9 [[0 6] [1 0]]] [[0 7] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [15 [0 7]]]]]] [0 2]]]]]]] [3 [[0 6] [0 2]]]]] [1 [4 [[9 [[0 6] [1 0]]] [[0 7] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [15 [0 7]]]]]] [0 2]]]]]]]]]"

// TestCertificatesAreGolden pins the sha256 of the certificates of
// programs of every shape the prover meets (small, a loop whose tape
// fits the 256 KiB after which main's prover finished its certificate in
// place and one past it, the memo emptied at censuses, a hash chain,
// deep results, 64 inputs), computed by the prover of main 9d77700 before issue
// #30 reworked its tables and tape: the profile is unchanged, so a faster
// prover must write the very same bytes.
func TestCertificatesAreGolden(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		program string
		inputs  []uint64
		budget  uint64
		want    string
		memory  uint64 // proved under optionsFor(memory) when not 0
	}{
		{"add2", add2, []uint64{7, 11}, 1 << 20, "adff1b01a11389ae88986cb6b724ccc6a3e4ff8142bdf6fa272dd2b6d7cf9935", 0},
		{"spin-10", spinProgram, []uint64{10}, 1 << 40, "1773cd9fd1dda4e335565f20d283e85f9c572c8fd6a2549a3d827ad7d6885ae3", 0},
		{"spin-16-in-place", spinProgram, []uint64{16}, 1 << 40, "514f012ac3b70c54d7fdee59a9b942e998cc0ddb2c27b39db50cdc322e2798a5", 0},
		// The memo emptied at every census: the same bytes.
		{"spin-16-censused", spinProgram, []uint64{16}, 1 << 40, "514f012ac3b70c54d7fdee59a9b942e998cc0ddb2c27b39db50cdc322e2798a5", 16 << 20},
		{"hash-chain-300", goldenChain, []uint64{300, 7}, 1 << 40, "1031c45efabba48c8668c669c7c15f94cb5ebf8d2755d090c435facb80b23fce", 0},
		{"deep-result", "[2 [" + hostile.DeepBuilder() + " [1 [1 0]]]]", []uint64{8}, 1 << 40, "b2de5d8f640f4bceb0661d88595ff171ea4d9f9f77fdb9db93e2c9e1e65ff39e", 0},
		{"deep-hashed", "[2 [" + hostile.DeepBuilder() + " [1 [15 [0 1]]]]]", []uint64{6}, 1 << 40, "3fee4666c9c463f8aa8b2aa7f8b1b5149a373f119dfe31dca919c474590c42da", 0},
		{"inputs-64", "[0 1]", sequence(64), 1 << 20, "81c0d4fabf22a98705fe2c4887b8a4fd606d1d6a5181c9e2e7e45180f86f6309", 0},
	} {
		var opt ProveOptions
		if c.memory != 0 {
			opt = optionsFor(c.memory)
		}
		run, err := Prove(ctx, parse(t, c.program), c.inputs, c.budget, opt)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sum := sha256.Sum256(run.Certificate)
		if got := hex.EncodeToString(sum[:]); got != c.want {
			t.Errorf("%s: certificate of %d bytes has sha256 %s, want %s", c.name, len(run.Certificate), got, c.want)
		}
	}
}

// sequence is the inputs 1 … n.
func sequence(n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(i + 1)
	}
	return s
}

// TestVectorCertificatesAreGolden pins one sha256 over the certificates
// of every reference case that proves (each preceded by its length), as
// TestCertificatesAreGolden does for the programs of this package.
func TestVectorCertificatesAreGolden(t *testing.T) {
	const want = "199c0d29b454ac269c5d3888880d4d3c45530b5ff9fbe99e3c2207705ac6372a"
	h := sha256.New()
	proved := 0
	for _, c := range okVectors(t, "") {
		run, err := Prove(context.Background(), c.prog, nil, c.budget, ProveOptions{})
		if err != nil {
			continue
		}
		h.Write(binary.AppendUvarint(nil, uint64(len(run.Certificate))))
		h.Write(run.Certificate)
		proved++
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("%d certificates have sha256 %s, want %s", proved, got, want)
	}
}
