package cert

import (
	"bytes"
	"context"
	"testing"
)

// Hash-heavy programs for BenchmarkVerify: most of their verification is
// hemera work, which is what the verifier's deferred, parallel digest
// checks are for.
const (
	// hashChain hashes its seed 300 times, each step's operand the
	// previous step's hash-data (the reduce package's hashLoop).
	hashChain = "[2 [[1 [[4 [[9 [[0 6] [1 0]]] [[0 7] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [15 [0 7]]]]]] [0 2]]]]]] [300 9]]] [1 [2 [[0 1] [0 2]]]]]]"
	// hashList builds the list [1 [2 … [300 0]]] of distinct atoms by a
	// countdown and hashes it once: 600 fresh digests in one step.
	hashList = "[2 [[1 [[4 [[9 [[0 6] [1 0]]] [[15 [0 7]] [2 [[3 [[0 2] [3 [[6 [[0 6] [1 1]]] [3 [[0 6] [0 7]]]]]]] [0 2]]]]]] [300 0]]] [1 [2 [[0 1] [0 2]]]]]]"
)

// BenchmarkVerify measures verification alone (uncompressed certificates)
// on the loops set and on the hash-heavy programs, held whole and
// streamed. Its sub-benchmark names are stable, so that two builds can be
// compared side by side (scripts/bench-verify.sh).
func BenchmarkVerify(b *testing.B) {
	progs, budgets := loopsPrograms(b)
	var loops [][]byte
	for i, p := range progs {
		run, err := Prove(context.Background(), p, nil, budgets[i], ProveOptions{})
		if err != nil {
			b.Fatal(err)
		}
		loops = append(loops, run.Certificate)
	}
	sets := []struct {
		name  string
		certs [][]byte
	}{
		{"loops", loops},
		{"hashchain", [][]byte{prove(b, hashChain, nil, 1<<20).Certificate}},
		{"hashlist", [][]byte{prove(b, hashList, nil, 1<<20).Certificate}},
	}
	for _, s := range sets {
		b.Run(s.name, func(b *testing.B) {
			exps := savedJobs(b, s.certs)
			for b.Loop() {
				for i, c := range s.certs {
					if _, _, err := Verify(context.Background(), c, exps[i], Bounds{}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		// The same certificates streamed (VerifyFrom of a reader of the
		// bytes): what the window and its refills cost.
		b.Run(s.name+"-streamed", func(b *testing.B) {
			exps := savedJobs(b, s.certs)
			var r bytes.Reader
			for b.Loop() {
				for i, c := range s.certs {
					r.Reset(c)
					if _, _, err := VerifyFrom(context.Background(), &r, int64(len(c)), exps[i], Bounds{}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// savedJobs returns the expectations of certs' jobs, as a supervisor
// holds them, and sets the benchmark's bytes to the certificates' size.
func savedJobs(b *testing.B, certs [][]byte) []Expect {
	var size int
	exps := make([]Expect, len(certs))
	for i, c := range certs {
		size += len(c)
		st, err := ReadStatement(c)
		if err != nil {
			b.Fatal(err)
		}
		exps[i] = expectOf(st)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	return exps
}
