package hemera

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// Digest is a Hemera output: four field elements. Every Digest produced by
// this package has canonical lanes; Bytes encodes lanes as they are.
type Digest [4]uint64

// Bytes returns the 32-byte form (the nox particle): each lane as 8 bytes
// little-endian.
func (d Digest) Bytes() [32]byte {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[0:8], d[0])
	binary.LittleEndian.PutUint64(b[8:16], d[1])
	binary.LittleEndian.PutUint64(b[16:24], d[2])
	binary.LittleEndian.PutUint64(b[24:32], d[3])
	return b
}

// DigestFromBytes reads four little-endian u64 limbs and reduces each mod p,
// which is how the reference reads child particles back (§3.7, §4).
func DigestFromBytes(b [32]byte) Digest {
	return Digest{
		field.Reduce(binary.LittleEndian.Uint64(b[0:8])),
		field.Reduce(binary.LittleEndian.Uint64(b[8:16])),
		field.Reduce(binary.LittleEndian.Uint64(b[16:24])),
		field.Reduce(binary.LittleEndian.Uint64(b[24:32])),
	}
}

// String returns the lowercase hex of Bytes, the form used in vectors.
func (d Digest) String() string {
	b := d.Bytes()
	return hex.EncodeToString(b[:])
}

// AtomDigest returns the digest of a nox atom, HashLeaf(le64(v), 0, false).
// v is reduced mod p first because atoms are identified by their canonical
// value. The 8-byte payload is absorbed directly: lane 0 holds bytes 0..6,
// lane 1 byte 7 followed by the 0x01 pad, lane 10 the length 8.
func AtomDigest(v uint64) Digest {
	v = field.Reduce(v)
	if v < smallAtoms {
		return smallAtomDigest(v)
	}
	return atomDigest(v)
}

// atomDigest is AtomDigest of a canonical v.
func atomDigest(v uint64) Digest {
	s := atomState(v)
	Permute(&s)
	return leaf(Digest{s[0], s[1], s[2], s[3]}, 0, false)
}

// atomState is the state atomDigest permutes first: the atom's eight
// bytes, little-endian, as one chunk.
func atomState(v uint64) State {
	var s State
	s[0] = v & mask56
	s[1] = v>>56 | 0x01<<8
	s[laneLength] = 8
	return s
}

// PairDigest returns the digest of a nox pair, HashNode(l, r, false).
func PairDigest(l, r Digest) Digest { return HashNode(l, r, false) }

// HashData is nox pattern 15: one permutation of [d0 d1 d2 d3 0 ... 0] (no
// flags, length or padding), returning lanes 0..3. It is deliberately not
// the particle of anything.
func HashData(d Digest) Digest {
	s := dataState(d)
	Permute(&s)
	return Digest{s[0], s[1], s[2], s[3]}
}

// dataState is the state HashData permutes.
func dataState(d Digest) State {
	var s State
	s[0], s[1], s[2], s[3] = d[0], d[1], d[2], d[3]
	return s
}
