package cert

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/internal/hostile"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// TestV2CertificatesAreGolden pins the sha256 of v2 certificates, as
// TestCertificatesAreGolden does v1's: the programs of that test, the
// corpus at its smoke size, the table collected far more often than the
// profile's rule (wmin 64: the same rule with a smaller Wmin, so every
// kind of root is kept through collections) and the memo emptied at
// censuses, each proved sequentially and pipelined. The hashes are
// those of main 89e9e32; TestV2DerivedResultsAreInterned compares the
// prover with a plain encoder of the same tree, so a change to both (a
// shared helper) would pass it, not this.
func TestV2CertificatesAreGolden(t *testing.T) {
	ctx := context.Background()
	type goldenCase struct {
		name    string
		program noun.Noun
		inputs  []uint64
		budget  uint64
		opt     ProveOptions
		want    string
	}
	cases := []goldenCase{
		{"add2", parse(t, add2), []uint64{7, 11}, 1 << 20, ProveOptions{}, "7201816efe0f9d958f523c6e2ea72958caeaeae2aa01ae97604bc9492b818ac5"},
		{"spin-16", parse(t, spinProgram), []uint64{16}, 1 << 40, ProveOptions{}, "43fcf9ba948cafb9e9289882308a23f15424614b62a227c27a16759be1b231dd"},
		{"spin-16-censused", parse(t, spinProgram), []uint64{16}, 1 << 40, optionsFor(16 << 20), "43fcf9ba948cafb9e9289882308a23f15424614b62a227c27a16759be1b231dd"},
		{"hash-chain-300", parse(t, goldenChain), []uint64{300, 7}, 1 << 40, ProveOptions{}, "1897eda9961e0bce0132fb4b9e19cd1e4e2f1a3388cab71b8cf8459b64146699"},
		{"deep-result", parse(t, "[2 ["+hostile.DeepBuilder()+" [1 [1 0]]]]"), []uint64{8}, 1 << 40, ProveOptions{}, "2de1a3cd4a1737f9265467a1897f62929344dfab790238dbaa3f74af2d6cc769"},
		{"deep-hashed", parse(t, "[2 ["+hostile.DeepBuilder()+" [1 [15 [0 1]]]]]"), []uint64{6}, 1 << 40, ProveOptions{}, "ec750f9491089e4f18d83306f82bf110eb74920f7e0f8504363041bdd82b2605"},
		{"inputs-64", parse(t, "[0 1]"), sequence(64), 1 << 20, ProveOptions{}, "2d5f252a91027af2eaf2beccc2f9a3a66588bb9691d017a4289a33684de1dc8a"},
	}
	// The corpus at 1e5: the sha256 of the certificate under the
	// profile's rule, and with wmin 64.
	corpusWant := map[string][2]string{
		"spin":      {"3a3b63b1745bb5b2e7bbe5d93e317dbf3ac0477a573556238bf36043aad0b255", "3a3b63b1745bb5b2e7bbe5d93e317dbf3ac0477a573556238bf36043aad0b255"},
		"nested":    {"dcf3430211b791800c7c5db7a6ebf50bd2e08a9aed06715e5c863060e47f1dc5", "dcf3430211b791800c7c5db7a6ebf50bd2e08a9aed06715e5c863060e47f1dc5"},
		"hashchain": {"db6ff0d7e8169f5e5fad2706fd16c7ed13dd46e5e4788e3cd5821619cc7ef443", "db6ff0d7e8169f5e5fad2706fd16c7ed13dd46e5e4788e3cd5821619cc7ef443"},
		"tree":      {"f05abe9604c8a9f93d82ec41fb229b70a68b1c17b61436061060b172ec7a8042", "2be77e8d85070aa678d8ed6142244e690131a27cd2bcc20cfc17aee0cf25b9ed"},
	}
	for _, c := range loadCorpus(t, "1e5") {
		prog, want := corpusProgram(t, c.program), corpusWant[c.program]
		cases = append(cases,
			goldenCase{c.program + "-1e5", prog, []uint64{c.input}, corpusBudget, ProveOptions{}, want[0]},
			goldenCase{c.program + "-1e5-wmin-64", prog, []uint64{c.input}, corpusBudget, ProveOptions{wmin: 64}, want[1]})
	}
	for _, c := range cases {
		seq, piped, seqErr, pipedErr := proveBoth(t, ctx, nil, c.program, c.inputs, c.budget, c.opt)
		if seqErr != nil || pipedErr != nil {
			t.Fatalf("%s: sequential: %v, pipelined: %v", c.name, seqErr, pipedErr)
		}
		s, p := sha256.Sum256(seq), sha256.Sum256(piped)
		if hex.EncodeToString(s[:]) != c.want || hex.EncodeToString(p[:]) != c.want {
			t.Errorf("%s: sha256 %x sequential, %x pipelined, want %s", c.name, s, p, c.want)
		}
	}
}

// TestV2VectorCertificatesAreGolden pins one sha256 over the v2
// certificates of every reference case that proves (each preceded by its
// length), sequential and pipelined, as TestVectorCertificatesAreGolden
// does for v1.
func TestV2VectorCertificatesAreGolden(t *testing.T) {
	const want = "759204bc6bab234a8cf40a2bd81f0e978bcc1d522397a60db0aef73a612cf725"
	hashes := [2]hash.Hash{sha256.New(), sha256.New()} // sequential, pipelined
	var proved [2]int
	for _, c := range okVectors(t, "") {
		seq, piped, seqErr, pipedErr := proveBoth(t, context.Background(), nil, c.prog, nil, c.budget, ProveOptions{})
		errs := [2]error{seqErr, pipedErr}
		for i, b := range [2][]byte{seq, piped} {
			if errs[i] != nil {
				continue
			}
			hashes[i].Write(binary.AppendUvarint(nil, uint64(len(b))))
			hashes[i].Write(b)
			proved[i]++
		}
	}
	for i, mode := range []string{"sequential", "pipelined"} {
		if got := hex.EncodeToString(hashes[i].Sum(nil)); got != want {
			t.Errorf("%s: %d certificates have sha256 %s, want %s", mode, proved[i], got, want)
		}
	}
}
