package hostile

// The digest attacks of issue #26 (item 6) on the verifier's deferred
// digest checks. Both are honest: their certificates are valid, so a
// worker that lies about a verify job (it says verified without looking)
// leaves the whole verification to the supervisor, whose memory and CPU
// must stay within the job's limits whatever the certificate and whatever
// GOMAXPROCS.
//
// Both repeat a formula 2^n times without recursing 2^n deep (the
// profile's depth limit is 1000): the program builds, at run time, the
// formula that applies F twice, [2 [F [1 F]]], from F, n times over
// (doubled), each doubling a compose in the program's own text. The
// node table holds each of the n formulas once, so a run of 2^n
// applications costs a table of a few nodes per doubling.

// doubler turns the formula a into [2 [a [1 a]]], a applied twice.
const doubler = "[3 [[1 2] [3 [[0 1] [3 [[1 1] [0 1]]]]]]]"

// doubled is a formula that evaluates to f applied 2^n times (f itself
// for n = 0), on any subject.
func doubled(f string, n int) string {
	x := "[1 " + f + "]"
	for range n {
		x = "[2 [" + x + " [1 " + doubler + "]]]"
	}
	return x
}

// The dense axis-0 attack: one compose runs a balanced cons tree of 2^n
// axis-0 steps ([0 0], the digest of the object) on the object 0, built
// at run time by doubling [0 0] into [3 [f f]]. Every axis-0 step
// discloses the same hash-data (after the first, a one-byte
// back-reference) and so does every cons of a level, so the certificate
// is about 2^(n+1) one-byte calls over a table of 26+5n nodes, which
// zstd packs some 1,400 to one at n = 24. Before the deferred checks were
// deduplicated, the verifier queued one digest check per axis-0 step (12
// bytes each, and a flag), counted against nothing: the issue's
// 14,444-byte artifact (35 MB decompressed) made the supervisor reach
// 792 MB verifying a job limited to 64 MiB.
const (
	// AxisZeroDoublings is the size: 2^24 axis-0 steps, a 33.6 MB
	// certificate.
	AxisZeroDoublings = 24
)

// consDoubler turns f into [3 [f f]].
const consDoubler = "[3 [[1 3] [3 [[0 1] [0 1]]]]]"

// AxisZeroProgram is the dense axis-0 program of 2^n axis-0 steps.
func AxisZeroProgram(n int) string {
	tree := "[1 [0 0]]"
	for range n {
		tree = "[2 [" + tree + " [1 " + consDoubler + "]]]"
	}
	// The tree's result (2^(n+2) atoms) is discarded: the output is 0.
	return "[2 [[2 [[1 0] " + tree + "]] [1 [1 0]]]]"
}

// AxisZeroBudget pays the run of AxisZeroProgram(n): 2^(n+1)-1 calls for
// the tree, at most nine a doubling, one reduction each.
func AxisZeroBudget(n int) uint64 { return 1<<(n+1) + 9*uint64(n) + 8 }

// AxisZero is the certificate of AxisZeroProgram(n) under
// AxisZeroBudget(n) (no inputs, output 0).
func AxisZero(n int) []byte { return axisZero(n, false) }

// AxisZeroForged is AxisZero with a wrong digest in every axis-0 result
// (the same wrong hash-data each time): it passes the walk and is
// rejected only by the digest checks after it, so its verification does
// all the work of a valid one.
func AxisZeroForged(n int) []byte { return axisZero(n, true) }

func axisZero(n int, forge bool) []byte {
	// About a byte a call.
	return trace(AxisZeroProgram(n), AxisZeroBudget(n), int(AxisZeroBudget(n))+1<<10, forge)
}

// The shared-operand attack: the program first builds L = [0 [0 … [0
// 0]]] of 2^listDoublings pairs (a doubled [0 x]), then hashes the state
// [p L] 2^hashDoublings times, the next state being [[0 p] L]: every
// hash's operand is fresh but shares L, so checking any one digest means
// digesting L. Before the digests were computed once into one structure,
// each worker of the parallel checks digested all of L into a memo of its
// own, and a verification's memory and CPU grew with GOMAXPROCS (the
// issue's 917,595-node certificate: 139 bytes a node and 1.0 s of CPU at
// one proc, 629 bytes a node and 10.7 s at 16).
const (
	// SharedListDoublings and SharedHashDoublings are the size:
	// L of 524,288 pairs and 32,768 hashes of it, about 850,000 nodes.
	SharedListDoublings = 19
	SharedHashDoublings = 15
)

// SharedOperandProgram is the shared-operand program; it returns 0.
func SharedOperandProgram(listDoublings, hashDoublings int) string {
	list := "[2 [[1 0] " + doubled("[3 [[1 0] [0 1]]]", listDoublings) + "]]"
	// [p L] → [hash([p L]) [[0 p] L]] → [[0 p] L].
	step := "[2 [[3 [[15 [0 1]] [3 [[3 [[1 0] [0 2]]] [0 3]]]]] [1 [0 3]]]]"
	hashes := "[2 [[3 [[1 0] " + list + "]] " + doubled(step, hashDoublings) + "]]"
	return "[2 [" + hashes + " [1 [1 0]]]]"
}

// SharedOperandBudget pays the run of SharedOperandProgram: five calls a
// pair of L, 36 reductions a hash, and the doublings.
func SharedOperandBudget(listDoublings, hashDoublings int) uint64 {
	return 8<<listDoublings + 40<<hashDoublings + 16*uint64(listDoublings+hashDoublings) + 64
}

// SharedOperand is the certificate of SharedOperandProgram under
// SharedOperandBudget (no inputs, output 0).
func SharedOperand(listDoublings, hashDoublings int) []byte {
	return sharedOperand(listDoublings, hashDoublings, false)
}

// SharedOperandForged is SharedOperand with a wrong digest in every
// hash's result: rejected only by the digest checks after the walk.
func SharedOperandForged(listDoublings, hashDoublings int) []byte {
	return sharedOperand(listDoublings, hashDoublings, true)
}

func sharedOperand(listDoublings, hashDoublings int, forge bool) []byte {
	return trace(SharedOperandProgram(listDoublings, hashDoublings), SharedOperandBudget(listDoublings, hashDoublings), 0, forge)
}
