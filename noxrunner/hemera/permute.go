package hemera

import "github.com/cyberia-to/cyber-supervisor/noxrunner/field"

// Permute applies the Hemera permutation (§3.3) to s in place. Input lanes
// are read modulo p, so non-canonical values are accepted; every output lane
// is canonical.
func Permute(s *State) { permute(s, &roundConstants) }

// permute is Permute with the constant table as a parameter, so tests can run
// the optimised code as Hemera₀ (all constants zero) during the bootstrap.
func permute(s *State, rc *[144]uint64) {
	x := *s
	if haveSIMD {
		// The same steps, fused: the partial rounds' normalisation by
		// 1/Z happens inside the terminal rounds' routine.
		externalSIMD(&x)
		fullRoundsSIMD(&x, (*[64]uint64)(rc[0:64]))
		z := projectiveRoundsSIMD(&x, (*[16]uint64)(rc[128:]))
		scaledFullRoundsSIMD(&x, (*[64]uint64)(rc[64:128]), field.Inv(canon(z)))
	} else {
		external(&x)
		fullRoundsGo(&x, (*[64]uint64)(rc[0:64]))
		partialRounds(&x, (*[16]uint64)(rc[128:]))
		fullRoundsGo(&x, (*[64]uint64)(rc[64:128]))
	}
	for i := range x {
		s[i] = canon(x[i])
	}
}

// fullRoundsGo runs four full rounds with the constants c[16r : 16r+16].
func fullRoundsGo(x *State, c *[64]uint64) {
	for r := 0; r < 4; r++ {
		fullRound(x, (*[Width]uint64)(c[16*r:]))
	}
}

// fullRound adds the round constants, applies x^7 to every lane and then the
// external matrix. The 16 lanes are independent, which keeps the multiplier
// busy.
func fullRound(x *State, c *[Width]uint64) {
	sbox16Go(x, c)
	external(x)
}

// sbox16Go adds the constants and raises every lane to the 7th power. It
// is the portable S-box, and the reference the vector one is tested
// against.
func sbox16Go(x *State, c *[Width]uint64) {
	sbox4(x[0:4:4], c[0:4:4])
	sbox4(x[4:8:8], c[4:8:8])
	sbox4(x[8:12:12], c[8:12:12])
	sbox4(x[12:16:16], c[12:16:16])
}

// sbox4 adds the constants to four lanes and raises them to the 7th power,
// the four chains interleaved step by step: each chain is three dependent
// multiplications deep, and placing independent ones next to each other
// lets the core overlap them without holding a whole lane's instructions
// in its scheduler first.
func sbox4(q, c []uint64) {
	q, c = q[:4], c[:4]
	a, b, d, e := addC(q[0], c[0]), addC(q[1], c[1]), addC(q[2], c[2]), addC(q[3], c[3])
	a2, b2, d2, e2 := mul(a, a), mul(b, b), mul(d, d), mul(e, e)
	a3, b3, d3, e3 := mul(a2, a), mul(b2, b), mul(d2, d), mul(e2, e)
	a4, b4, d4, e4 := mul(a2, a2), mul(b2, b2), mul(d2, d2), mul(e2, e2)
	q[0], q[1], q[2], q[3] = mul(a3, a4), mul(b3, b4), mul(d3, d4), mul(e3, e4)
}

// external applies the external matrix circ(2·M4, M4, M4, M4): chunk c
// becomes M4·x_c + Σ_c' M4·x_c'. M4 is linear, so that is M4·(x_c + t) with
// t = Σ_c' x_c' the four column sums: one pass for t, then one M4 per chunk
// on its own lanes plus t, which keeps few values live at a time.
//
// Everything is an exact integer sum in (hi, lo) pairs: t < 4·2^64, a chunk
// lane plus t < 5·2^64, and M4's rows have weight 7, so every output is
// below 35·2^64 and one redSmall per lane reduces it.
func external(x *State) {
	var t [8]uint64 // (hi, lo) of the four column sums
	for j := 0; j < 4; j++ {
		h, l := wa(0, x[j], x[4+j])
		h, l = wa(h, l, x[8+j])
		t[2*j], t[2*j+1] = wa(h, l, x[12+j])
	}
	m4(x[0:4:4], &t)
	m4(x[4:8:8], &t)
	m4(x[8:12:12], &t)
	m4(x[12:16:16], &t)
}

// m4 replaces the four lanes of q by M4·(q + t). Row i of M4 is
// s + u_i + 2·u_(i+1) with s the sum of the chunk (indices mod 4); the
// grouping below shares the partial sums.
func m4(q []uint64, t *[8]uint64) {
	q = q[:4]
	ah, al := wa(t[0], t[1], q[0])
	bh, bl := wa(t[2], t[3], q[1])
	ch, cl := wa(t[4], t[5], q[2])
	dh, dl := wa(t[6], t[7], q[3])
	abH, abL := ww(ah, al, bh, bl)
	cdH, cdL := ww(ch, cl, dh, dl)
	sH, sL := ww(abH, abL, cdH, cdL)
	sbH, sbL := ww(sH, sL, bh, bl)
	sdH, sdL := ww(sH, sL, dh, dl)
	y1h, y1l := ww(sbH, sbL, ch, cl)
	y3h, y3l := ww(sdH, sdL, ah, al)
	q[0] = redSmall(ww(sbH, sbL, abH, abL))
	q[1] = redSmall(ww(y1h, y1l, ch, cl))
	q[2] = redSmall(ww(sdH, sdL, cdH, cdL))
	q[3] = redSmall(ww(y3h, y3l, ah, al))
}
