package cert

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/bits"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
)

// Verify checks an uncompressed certificate for the job described by exp,
// in the order that keeps a hostile certificate as cheap as its job: first
// the statement against the job (program, inputs, expected output, budget:
// ErrMismatch), then the witness's size against what the statement allows
// (each call costs at least one reduction and discloses at most
// MaxStepBytes), then every reduction step and the cost accounting, with
// the node table bounded by bounds (ErrTooLarge) and every disclosed
// result allowed only the new nodes its step's rule can produce. Anything
// invalid is ErrRejected, found as soon as it is read. ctx stops a long
// verification (its error is returned, wrapped).
//
// It returns the verified statement and what was compared with the job.
func Verify(ctx context.Context, b []byte, exp Expect, bounds Bounds) (*Statement, Checked, error) {
	if len(b) > MaxEncodedBytes && !bytes.HasPrefix(b, []byte(MagicV2)) {
		return nil, Checked{}, tooLargef("%d bytes is over the format's %d", len(b), MaxEncodedBytes)
	}
	v := &verifier{ctx: ctx, r: &reader{b: b}, maxNodes: bounds.maxNodes(), wminKnob: bounds.wmin}
	return v.verify(exp)
}

// VerifyFrom is Verify of a certificate of size bytes read from src as
// the walk goes (a decompressing reader, typically): the statement is
// checked against the job as soon as it is read, and a verification that
// fails stops reading where it fails, so that a hostile certificate
// costs what was read of it, never its length. At most a 64 KiB window
// of the certificate is held. size must be known before the first byte
// (a zstd frame declares it) because the witness's size is checked
// against the statement before the first step; src must deliver exactly
// size bytes and then end (io.EOF), or the certificate is rejected; an
// error of src is returned wrapped.
func VerifyFrom(ctx context.Context, src io.Reader, size int64, exp Expect, bounds Bounds) (*Statement, Checked, error) {
	v := &verifier{ctx: ctx, r: newStreamReader(src, size), maxNodes: bounds.maxNodes(), wminKnob: bounds.wmin}
	if size < 0 || size > MaxEncodedBytes {
		// Only a v2 certificate may be of unknown length or longer than
		// v1's bound: look at its magic, and at nothing more.
		if !v.r.isV2() {
			if v.r.err != nil {
				return nil, Checked{}, v.r.err
			}
			return nil, Checked{}, tooLargef("%d bytes is over the format's %d", size, MaxEncodedBytes)
		}
	}
	return v.verify(exp)
}

func (v *verifier) verify(exp Expect) (*Statement, Checked, error) {
	r := v.r
	if r.isV2() {
		return v.verifyV2(exp)
	}
	if r.err != nil {
		return nil, Checked{}, r.err
	}
	if r.open || r.size > MaxEncodedBytes {
		return nil, Checked{}, tooLargef("a %s certificate has a known length of at most %d bytes", Profile, MaxEncodedBytes)
	}
	st := readStatement(r)
	if r.err != nil {
		return nil, Checked{}, r.err
	}
	checked, err := exp.Check(st)
	if err != nil {
		return nil, Checked{}, err
	}
	calls := r.uvarint()
	if r.err != nil {
		return nil, Checked{}, r.err
	}
	// Every call costs at least one reduction and takes at least one byte;
	// no call discloses more than MaxStepBytes.
	rest := r.rest()
	if calls > st.Reductions {
		return nil, Checked{}, rejectf("witness has %d calls, more than the %d reductions", calls, st.Reductions)
	}
	if hi, most := bits.Mul64(calls, MaxStepBytes); calls > rest || (hi == 0 && rest > most) {
		return nil, Checked{}, rejectf("witness of %d bytes cannot hold exactly %d calls", rest, calls)
	}
	v.calls = calls
	// Most certificates are small: start small and let the table grow,
	// never past its bound (a small bound is a small job's memory).
	v.t = newTable(int(min(min(calls, 1<<16)/4+64, v.maxNodes)))
	progID, _ := v.t.addTokens(st.Program)
	subjID := v.t.addSubject(st.Inputs)
	if uint64(v.t.len()) > v.maxNodes {
		return nil, Checked{}, tooLargef("the statement alone has %d nodes, the bound is %d", v.t.len(), v.maxNodes)
	}
	res, rem := v.eval(subjID, progID, st.Budget, 0)
	if r.err != nil {
		return nil, Checked{}, r.err
	}
	if v.entered != v.calls {
		return nil, Checked{}, rejectf("witness has %d calls, the run made %d", v.calls, v.entered)
	}
	if left := r.rest(); left != 0 {
		return nil, Checked{}, rejectf("%d trailing bytes", left)
	}
	if r.ended(); r.err != nil {
		return nil, Checked{}, r.err
	}
	if st.Budget-rem != st.Reductions {
		return nil, Checked{}, rejectf("reductions %d, the steps cost %d", st.Reductions, st.Budget-rem)
	}
	if !v.outputsEqual(res, st.Outputs) {
		return nil, Checked{}, rejectf("outputs differ from the result")
	}
	if err := v.checkHashes(); err != nil {
		return nil, Checked{}, err
	}
	return st, checked, nil
}

// verifier walks the formulas with the disclosed results. Every failure is
// recorded in r.err (the first one wins) and unwinds the walk.
type verifier struct {
	ctx      context.Context
	r        *reader
	t        *table
	maxNodes uint64
	calls    uint64 // tape entries announced
	entered  uint64 // calls walked so far
	// checks are the deferred digest checks (hashcheck.go).
	checks digestChecks
	// digests are the arrays of the last digest checks' set, reused by
	// the next.
	digests *digestSet
	// bstack is the scratch stack of bound.
	bstack []uint32
	// digested counts the digests the deferred checks computed, for the
	// resource tests.
	digested int
	// gc is set when the certificate is v2 (verifyv2.go).
	gc *walkGC
	// wminKnob replaces CollectMinNodes in tests (Bounds.wmin).
	wminKnob uint64
}

// pollEvery is how many calls the walk makes between looks at its
// context: a few hundred microseconds of work.
const pollEvery = 1 << 12

// stopped reports (and records) a cancelled verification.
func (v *verifier) stopped() bool {
	if err := v.ctx.Err(); err != nil {
		if v.r.err == nil {
			v.r.err = fmt.Errorf("verification stopped: %w", err)
		}
		return true
	}
	return false
}

// result reads the disclosed result of the call that just finished: a
// reference that may define at most maxNew new nodes, the most its step's
// rule can produce (none for a node the run already had, one pair for a
// cons, one atom for arithmetic, a hash-data for a digest step). So a
// result never builds more than a few nodes before it is checked, and
// its pending definitions never stack deeper than maxNew. A definition
// of a node the table already has is not canonical.
func (v *verifier) result(maxNew int) uint32 {
	r := v.r
	var x uint64
	if p := r.pos; p < len(r.b) && r.b[p] < 0x80 && r.err == nil {
		// uvarint's one-byte case, inlined.
		r.pos, x = p+1, uint64(r.b[p])
	} else if x = r.uvarint(); r.err != nil {
		return 0
	}
	if x >= refBack {
		// Most results are a node the run already had: one reference,
		// most often to a node defined since the last collection.
		back := x - refBack
		if g := v.t.gc; g != nil {
			if n := uint64(len(g.ids)); back < n && g.ids[n-1-back] == g.next-1-back {
				return g.slots[n-1-back]
			}
		}
		id, _ := v.backRef(back)
		return id
	}
	return v.defineResult(x, maxNew)
}

// defineResult is result's reading of a result that starts with a
// definition (x, read already).
func (v *verifier) defineResult(x uint64, maxNew int) uint32 {
	r := v.r
	// open[i] is the head of the i-th unfinished pair definition, or
	// noHead while its head is still being read.
	var open [MaxStepNodes]uint32
	depth, defined, base := 0, 0, uint64(v.t.nodes())
	for ; ; x = r.uvarint() {
		if r.err != nil {
			return 0
		}
		var id uint32
		switch {
		case x == refPair || x == refAtom:
			if defined++; defined > maxNew {
				r.fail("step result defines more nodes than its rule produces")
				return 0
			}
			if base+uint64(defined) > v.maxNodes {
				v.tooLarge()
				return 0
			}
			if x == refPair {
				open[depth] = noHead
				depth++
				continue
			}
			val := r.uvarint()
			if r.err != nil {
				return 0
			}
			if val >= field.P {
				r.fail("non-canonical atom")
				return 0
			}
			var added bool
			if id, added = v.t.atom(val); !added {
				r.fail("atom defined twice")
				return 0
			}
		default:
			var ok bool
			if id, ok = v.backRef(x - refBack); !ok {
				return 0
			}
		}
		// Attach id to the innermost open pair, closing pairs as they fill.
		for {
			if depth == 0 {
				return id
			}
			if open[depth-1] == noHead {
				open[depth-1] = id
				break
			}
			var added bool
			if id, added = v.t.pair(open[depth-1], id); !added {
				r.fail("pair defined twice")
				return 0
			}
			depth--
		}
	}
}

// backRef resolves a back-reference back places before the newest node;
// a reference before the first node (or, in a v2 walk, to a collected
// one) fails the verification.
func (v *verifier) backRef(back uint64) (uint32, bool) {
	if g := v.t.gc; g != nil {
		// A node defined since the last collection is where its
		// distance from the newest says (slotOf's first look, inlined:
		// most references are to recent nodes).
		if n := uint64(len(g.ids)); back < n && g.ids[n-1-back] == g.next-1-back {
			return g.slots[n-1-back], true
		}
		return v.backV2(back)
	}
	if back >= uint64(v.t.len()) {
		v.r.fail("reference before the first node")
		return 0, false
	}
	return v.t.len() - 1 - uint32(back), true
}

// noHead marks an open pair definition whose head is not read yet (no id
// reaches it: ids stay below maxNodes < 2^32-1).
const noHead = ^uint32(0)

func (v *verifier) tooLarge() {
	if v.r.err == nil {
		v.r.err = tooLargef("node table over its bound of %d at byte %d", v.maxNodes, v.r.at())
	}
}

func (v *verifier) fail(what string) (uint32, uint64) {
	v.r.fail(what)
	return 0, 0
}

func satAdd(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return ^uint64(0)
	}
	return s
}

// unary and binary reserve their operands' static bounds (reduce's
// reservation rule). They ask bound of every operand of every call: its
// cached answer is read here, without a call (bound is over the
// inlining budget).
func (v *verifier) unary(o, a uint32, b uint64, depth int) (uint32, uint64) {
	t := v.t
	bv, dyn := t.bound[a], t.bflags[a]&boundDynamic != 0
	if t.bflags[a]&boundKnown == 0 {
		bv, dyn = v.boundSlow(a)
	}
	if !dyn && bv <= b {
		x, r := v.eval(o, a, bv, depth+1)
		return x, b - (bv - r)
	}
	return v.eval(o, a, b, depth+1)
}

func (v *verifier) binary(o, x, y uint32, b uint64, depth int) (uint32, uint32, uint64) {
	t := v.t
	vx, dx := t.bound[x], t.bflags[x]&boundDynamic != 0
	if t.bflags[x]&boundKnown == 0 {
		vx, dx = v.boundSlow(x)
	}
	vy, dy := t.bound[y], t.bflags[y]&boundDynamic != 0
	if t.bflags[y]&boundKnown == 0 {
		vy, dy = v.boundSlow(y)
	}
	if !dx && !dy && satAdd(vx, vy) <= b {
		rx, remx := v.eval(o, x, vx, depth+1)
		if v.r.err != nil {
			return 0, 0, 0
		}
		ry, remy := v.eval(o, y, vy, depth+1)
		return rx, ry, b - ((vx - remx) + (vy - remy))
	}
	rx, b1 := v.eval(o, x, b, depth+1)
	if v.r.err != nil {
		return 0, 0, 0
	}
	ry, b2 := v.eval(o, y, b1, depth+1)
	return rx, ry, b2
}
