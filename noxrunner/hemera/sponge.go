package hemera

import (
	"encoding/binary"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// Capacity lanes with a fixed meaning (§3.5).
const (
	laneCounter = 8  // chunk counter
	laneFlags   = 9  // tree flags
	laneLength  = 10 // total message length in bytes, written at finalisation
)

// Tree flags for laneFlags.
const (
	flagRoot   = 1
	flagParent = 2
	flagChunk  = 4
)

// blockBytes is one absorbed block: 8 rate lanes × 7 bytes. Seven bytes keep
// every encoded element below 2^56 < p, so the byte encoding is injective.
const blockBytes = Rate * 7

const mask56 = 1<<56 - 1

// absorb adds one 56-byte block, read as eight 7-byte little-endian
// integers, into the rate lanes.
func absorb(s *State, b *[blockBytes]byte) {
	// Reading 8 bytes and masking avoids byte-by-byte assembly; the last
	// element is read from one byte earlier so the load stays inside b.
	s[0] = field.Add(s[0], binary.LittleEndian.Uint64(b[0:8])&mask56)
	s[1] = field.Add(s[1], binary.LittleEndian.Uint64(b[7:15])&mask56)
	s[2] = field.Add(s[2], binary.LittleEndian.Uint64(b[14:22])&mask56)
	s[3] = field.Add(s[3], binary.LittleEndian.Uint64(b[21:29])&mask56)
	s[4] = field.Add(s[4], binary.LittleEndian.Uint64(b[28:36])&mask56)
	s[5] = field.Add(s[5], binary.LittleEndian.Uint64(b[35:43])&mask56)
	s[6] = field.Add(s[6], binary.LittleEndian.Uint64(b[42:50])&mask56)
	s[7] = field.Add(s[7], binary.LittleEndian.Uint64(b[48:56])>>8)
}

// Hash is the plain-mode sponge of §3.6: full 56-byte blocks are absorbed
// and permuted; the remainder is padded with 0x01 and zeros to a full block
// (always present, even for empty input or exact multiples of 56), the total
// length is written to lane 10, and one last permutation yields lanes 0..3.
func Hash(data []byte) Digest {
	var s State
	n := len(data)
	for len(data) >= blockBytes {
		absorb(&s, (*[blockBytes]byte)(data))
		Permute(&s)
		data = data[blockBytes:]
	}
	var last [blockBytes]byte
	copy(last[:], data)
	last[len(data)] = 0x01
	absorb(&s, &last)
	// The lane is overwritten, not added to (the reference sets it).
	s[laneLength] = uint64(n)
	Permute(&s)
	return Digest{s[0], s[1], s[2], s[3]}
}

// HashLeaf hashes a content chunk for the tree (§3.7): the sponge digest of
// chunk is re-permuted with the chunk counter and the CHUNK flag (plus ROOT
// when isRoot) in the capacity.
func HashLeaf(chunk []byte, counter uint64, isRoot bool) Digest {
	return leaf(Hash(chunk), counter, isRoot)
}

func leaf(h Digest, counter uint64, isRoot bool) Digest {
	s := leafState(h, counter, isRoot)
	Permute(&s)
	return Digest{s[0], s[1], s[2], s[3]}
}

// leafState is the state leaf permutes.
func leafState(h Digest, counter uint64, isRoot bool) State {
	var s State
	s[0], s[1], s[2], s[3] = h[0], h[1], h[2], h[3]
	s[laneCounter] = counter
	s[laneFlags] = flagChunk
	if isRoot {
		s[laneFlags] |= flagRoot
	}
	return s
}

// HashNode combines two child digests (§3.7): one permutation of
// [l, r | 0, PARENT (| ROOT), 0...].
func HashNode(l, r Digest, isRoot bool) Digest {
	s := nodeState(l, r, isRoot)
	Permute(&s)
	return Digest{s[0], s[1], s[2], s[3]}
}

// nodeState is the state HashNode permutes.
func nodeState(l, r Digest, isRoot bool) State {
	var s State
	s[0], s[1], s[2], s[3] = l[0], l[1], l[2], l[3]
	s[4], s[5], s[6], s[7] = r[0], r[1], r[2], r[3]
	s[laneFlags] = flagParent
	if isRoot {
		s[laneFlags] |= flagRoot
	}
	return s
}
