package hemera

import "github.com/cyberia-to/cyber-supervisor/noxrunner/field"

// The reference model below transcribes spec §3 literally, using only the
// canonical field package. It is deliberately slow and obvious: the optimised
// permutation, the embedded constant table and the sponge are all checked
// against it, so it shares nothing with them but the constant tables (which
// the spec's vectors and the bootstrap test pin independently).

var refM4 = [4][4]uint64{{2, 3, 1, 1}, {1, 2, 3, 1}, {1, 1, 2, 3}, {3, 1, 1, 2}}

func refExternal(s *[16]uint64) {
	var y [16]uint64
	for c := 0; c < 4; c++ {
		for row := 0; row < 4; row++ {
			var acc uint64
			for col := 0; col < 4; col++ {
				acc = field.Add(acc, field.Mul(refM4[row][col], s[4*c+col]))
			}
			y[4*c+row] = acc
		}
	}
	var sums [4]uint64
	for i := 0; i < 16; i++ {
		sums[i%4] = field.Add(sums[i%4], y[i])
	}
	for i := 0; i < 16; i++ {
		s[i] = field.Add(y[i], sums[i%4])
	}
}

func refInternal(s *[16]uint64) {
	var sum uint64
	for i := 0; i < 16; i++ {
		sum = field.Add(sum, s[i])
	}
	for i := 0; i < 16; i++ {
		s[i] = field.Add(field.Mul(internalDiag[i], s[i]), sum)
	}
}

func refPermute(s *[16]uint64, rc *[144]uint64) {
	for i := range s {
		s[i] = field.Reduce(s[i])
	}
	refExternal(s)
	for r := 0; r < 4; r++ {
		for i := 0; i < 16; i++ {
			s[i] = field.Pow7(field.Add(s[i], rc[16*r+i]))
		}
		refExternal(s)
	}
	for r := 0; r < 16; r++ {
		s[0] = field.Inv(field.Add(s[0], rc[128+r]))
		refInternal(s)
	}
	for r := 0; r < 4; r++ {
		for i := 0; i < 16; i++ {
			s[i] = field.Pow7(field.Add(s[i], rc[64+16*r+i]))
		}
		refExternal(s)
	}
}

// refEncodeBlock splits a 56-byte block into eight 7-byte little-endian
// elements.
func refEncodeBlock(block []byte) [8]uint64 {
	var out [8]uint64
	for i := 0; i < 8; i++ {
		var v uint64
		for j := 6; j >= 0; j-- {
			v = v<<8 | uint64(block[7*i+j])
		}
		out[i] = v
	}
	return out
}

// refSponge is the plain-mode sponge of §3.6 parameterised by the round
// constants, so the bootstrap can run it with the all-zero table.
func refSponge(data []byte, rc *[144]uint64) [16]uint64 {
	var s [16]uint64
	rest := data
	for len(rest) >= 56 {
		e := refEncodeBlock(rest[:56])
		for i := 0; i < 8; i++ {
			s[i] = field.Add(s[i], e[i])
		}
		refPermute(&s, rc)
		rest = rest[56:]
	}
	block := make([]byte, 56)
	copy(block, rest)
	block[len(rest)] = 0x01
	e := refEncodeBlock(block)
	for i := 0; i < 8; i++ {
		s[i] = field.Add(s[i], e[i])
	}
	s[10] = uint64(len(data))
	refPermute(&s, rc)
	return s
}

// refBootstrap derives the round constants as §3.4 describes: Hemera₀ (all
// constants zero) absorbs "cyber" and is squeezed eight lanes at a time.
func refBootstrap() [144]uint64 {
	var zero [144]uint64
	s := refSponge([]byte("cyber"), &zero)
	var rc [144]uint64
	for n := 0; ; {
		copy(rc[n:], s[:8])
		n += 8
		if n == len(rc) {
			return rc
		}
		refPermute(&s, &zero)
	}
}
