package cert

import "math/bits"

// What a certificate can cost is fixed by its job before a byte of it is
// read: the decoded size follows from the budget (every step costs at
// least one reduction and discloses at most MaxStepBytes), the node table
// from the memory the job may use. A verification checks these bounds as
// it goes and stops at the first one crossed, so a hostile certificate
// costs at most what an honest one for the same job could.
const (
	// MaxStepBytes is the longest reference one step may disclose: the
	// hash-data [[d0 d1] [d2 d3]] of a hash or axis-0 step written as new
	// nodes (three pair marks and four atoms of at most 1 + 10 bytes).
	MaxStepBytes = 3 + 4*11
	// MaxStepNodes is the most nodes one step may define (the same
	// hash-data: three pairs and four atoms).
	MaxStepNodes = 7
	// MaxStatementBytes is the longest statement with its call count
	// (78,534 bytes): magic, profile, MaxProgramNodes atoms of program
	// tokens, MaxInputs and MaxOutputs ten-byte varints, reductions,
	// budget and calls. ReadStatement needs no more than this prefix.
	MaxStatementBytes = len(Magic) + 1 + len(Profile) + 3 + MaxProgramNodes*9 +
		1 + MaxInputs*10 + 2 + MaxOutputs*10 + 3*10
	// NodeBytes is what one node of the table costs a verification at
	// most, with what is charged to it: its entries in the table's
	// arrays and its open-addressed index with their growth (at most
	// 100 and 85 bytes), the deferred digest checks with the node as
	// operand (at most one of each kind: 8 bytes), and its digest when a
	// check needs it, with its place in the order the digests are spread by (at most
	// 40 bytes). TestVerifyMemoryPerNode measures it at GOMAXPROCS 1, 2
	// and 16; nothing a verification holds grows with GOMAXPROCS.
	NodeBytes = 256
	// StreamBytes is what a streamed verification (VerifyFrom) holds
	// besides its node table: its window of the certificate and the
	// decoded statement.
	StreamBytes = streamWindow + MaxStatementBytes
	// DefaultMaxNodes is the table bound of a verification whose caller
	// sets none: 1 GiB of nodes.
	DefaultMaxNodes = (1 << 30) / NodeBytes
)

// MaxEncodedFor is the longest certificate a run under budget can have:
// the longest statement and MaxStepBytes per reduction, at most
// MaxEncodedBytes. It is the bound to decompress an artifact with, before
// anything in it can be read.
func MaxEncodedFor(budget uint64) uint64 {
	hi, lo := bits.Mul64(budget, MaxStepBytes)
	if hi != 0 || lo > MaxEncodedBytes {
		return MaxEncodedBytes
	}
	return min(lo+uint64(MaxStatementBytes), MaxEncodedBytes)
}

// MaxTrailerBytes is the longest v2 trailer: MaxOutputs ten-byte
// outputs with their count, reductions and calls.
const MaxTrailerBytes = 3 + MaxOutputs*10 + 2*10

// MaxEncodedV2For is the longest v2 certificate a run under budget can
// have: the longest header, MaxStepBytes per reduction and the longest
// trailer (saturating at the largest uint64). Unlike v1 there is no fixed
// cap: a caller bounds what it reads by the job's artifact limit.
func MaxEncodedV2For(budget uint64) uint64 {
	hi, lo := bits.Mul64(budget, MaxStepBytes)
	if hi != 0 {
		return ^uint64(0)
	}
	s, c := bits.Add64(lo, uint64(MaxStatementBytes+MaxTrailerBytes), 0)
	if c != 0 {
		return ^uint64(0)
	}
	return s
}

// Bounds limit one verification beyond what its job fixes.
type Bounds struct {
	// MaxNodes bounds the node table: the program, the subject and every
	// node the witness defines (0: DefaultMaxNodes). Crossing it is
	// ErrTooLarge.
	MaxNodes uint64
	// wmin replaces CollectMinNodes for a v2 certificate, in tests (0:
	// the profile's); see ProveOptions.wmin.
	wmin uint64
}

// BoundsFor is the bound of a verification that may use memory bytes for
// its table (0: the default).
func BoundsFor(memory uint64) Bounds {
	if memory == 0 {
		return Bounds{}
	}
	return Bounds{MaxNodes: max(memory/NodeBytes, 1)}
}

func (b Bounds) maxNodes() uint64 {
	if b.MaxNodes == 0 {
		return DefaultMaxNodes
	}
	// Ids are 32-bit.
	return min(b.MaxNodes, 1<<32-1)
}
