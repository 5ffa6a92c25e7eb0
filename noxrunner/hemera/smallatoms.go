package hemera

import "sync/atomic"

// smallAtoms: the digests of atoms below it are remembered. Formulas are
// mostly small atoms (pattern numbers, axes, small constants) and an atom
// digest costs two permutations (~3 µs), so a program's particle is
// dominated by digests of the same few atoms again and again.
const smallAtoms = 256

// smallDigests is filled lazily, so that a process that digests few atoms
// (a worker runs one job) pays nothing up front.
var smallDigests [smallAtoms]atomic.Pointer[Digest]

func smallAtomDigest(v uint64) Digest {
	if d := smallDigests[v].Load(); d != nil {
		return *d
	}
	d := atomDigest(v)
	smallDigests[v].Store(&d)
	return d
}
