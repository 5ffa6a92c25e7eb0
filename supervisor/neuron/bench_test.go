package neuron

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

func BenchmarkSign(b *testing.B) {
	k, _ := GenerateKey()
	st := NewStatement("neuron/bench/1").Text("x").U64(1)
	for b.Loop() {
		if _, err := k.Sign(st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSignBtcec is btcec's signature of the same kind (CustomNonce
// with fresh randomness, FastSign), beside BenchmarkSign: the price of
// the constant-time base multiplication.
func BenchmarkSignBtcec(b *testing.B) {
	secret := random32(b)
	priv, _ := btcec.PrivKeyFromBytes(secret[:])
	digest := NewStatement("neuron/bench/1").Text("x").U64(1).Digest()
	for b.Loop() {
		if _, err := schnorr.Sign(priv, digest[:], schnorr.CustomNonce(random32(b)), schnorr.FastSign()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	k, _ := GenerateKey()
	st := NewStatement("neuron/bench/1").Text("x").U64(1)
	sig, _ := k.Sign(st)
	pub := k.PublicKey()
	for b.Loop() {
		if !pub.Verify(st, sig) {
			b.Fatal("verify")
		}
	}
}

func BenchmarkBaseMult(b *testing.B) {
	k, _ := GenerateKey()
	b.Run("constant-time", func(b *testing.B) {
		for b.Loop() {
			ctBaseMult(k.d)
		}
	})
	b.Run("decred", func(b *testing.B) {
		var r secp256k1.JacobianPoint
		for b.Loop() {
			secp256k1.ScalarBaseMultNonConst(k.d, &r)
		}
	})
}

// leakClasses are the numbers of zero bytes in a nonce that
// BenchmarkSigningTimeLeak times signatures of.
const leakClasses = 5 // 0, 1, 2, 3 and 4 zero bytes

// auxForZeroBytes finds, for each class z, auxiliary randomness that makes
// the nonce of (key, msg) have exactly z zero bytes: BIP-340's nonce is a
// hash, so this is a search (about 120,000 hashes for 4 zero bytes).
func auxForZeroBytes(k *Key, msg []byte, perClass int) [leakClasses][][32]byte {
	var out [leakClasses][][32]byte
	de := evenSecret(k.d, k.pub.odd())
	px := k.pub.xOnly()
	var aux [32]byte
	for i := uint64(0); ; i++ {
		binary.BigEndian.PutUint64(aux[:], i)
		n := nonce(&de, &px, msg, &aux)
		nb := n.Bytes()
		z := 0
		for _, c := range nb {
			if c == 0 {
				z++
			}
		}
		if z < leakClasses && len(out[z]) < perClass {
			out[z] = append(out[z], aux)
		}
		done := true
		for _, c := range out {
			done = done && len(c) == perClass
		}
		if done {
			return out
		}
	}
}

// BenchmarkSigningTimeLeak times signatures whose nonces have 0 to 4 zero
// bytes, interleaved at random, b.N of each, with the constant-time
// signer and with btcec's (whose base multiplication, decred's
// ScalarBaseMultNonConst, skips zero bytes). It reports the slope of the
// mean time over the number of zero bytes (ns-per-zero-byte) and Welch's
// t between 0 and 4 zero bytes (t-0-vs-4; |t| > 4.5 is the usual
// threshold for a leak, as in dudect), on the fastest 80% of all samples
// (the rest is preemption by other processes). scripts/bench-signing.sh
// runs it long enough to mean something; CI runs it once.
func BenchmarkSigningTimeLeak(b *testing.B) {
	k, _ := GenerateKey()
	msg := NewStatement("neuron/bench/1").Text("x").U64(1).Digest()
	const perClass = 8
	auxes := auxForZeroBytes(k, msg[:], perClass)
	secret := k.secret()
	priv, _ := btcec.PrivKeyFromBytes(secret[:])
	clear(secret[:])
	signers := []struct {
		name string
		sign func(aux [32]byte)
	}{
		{"constant-time", func(aux [32]byte) {
			if _, err := bip340Sign(k.d, k.pub.xOnly(), k.pub.odd(), msg[:], aux); err != nil {
				b.Fatal(err)
			}
		}},
		{"btcec", func(aux [32]byte) {
			if _, err := schnorr.Sign(priv, msg[:], schnorr.CustomNonce(aux), schnorr.FastSign()); err != nil {
				b.Fatal(err)
			}
		}},
	}
	for _, s := range signers {
		b.Run(s.name, func(b *testing.B) {
			samples := make([][]float64, leakClasses)
			order := make([]int, leakClasses)
			for i := range order {
				order[i] = i
			}
			for i := 0; b.Loop(); i++ {
				rand.Shuffle(len(order), func(a, c int) { order[a], order[c] = order[c], order[a] })
				for _, z := range order {
					aux := auxes[z][i%perClass]
					start := time.Now()
					s.sign(aux)
					samples[z] = append(samples[z], float64(time.Since(start).Nanoseconds()))
				}
			}
			if len(samples[0]) < 10 {
				return
			}
			slope, t := leakStatistics(samples, 0.8)
			b.ReportMetric(slope, "ns-per-zero-byte")
			b.ReportMetric(t, "t-0-vs-4")
		})
	}
}

// leakStatistics crops every class at the keep quantile of all samples
// together, then returns the least-squares slope of the class means over
// the class index and Welch's t between the first and the last class.
func leakStatistics(samples [][]float64, keep float64) (slope, t float64) {
	var all []float64
	for _, s := range samples {
		all = append(all, s...)
	}
	slices.Sort(all)
	limit := all[int(keep*float64(len(all)-1))]
	means := make([]float64, len(samples))
	vars := make([]float64, len(samples))
	counts := make([]float64, len(samples))
	for z, s := range samples {
		var sum, sq, n float64
		for _, v := range s {
			if v <= limit {
				sum += v
				sq += v * v
				n++
			}
		}
		means[z] = sum / n
		vars[z] = (sq - sum*sum/n) / (n - 1)
		counts[z] = n
	}
	var sx, sy, sxx, sxy float64
	for z, m := range means {
		x := float64(z)
		sx += x
		sy += m
		sxx += x * x
		sxy += x * m
	}
	n := float64(len(means))
	slope = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	last := len(samples) - 1
	t = (means[last] - means[0]) / math.Sqrt(vars[last]/counts[last]+vars[0]/counts[0])
	return slope, t
}

// BenchmarkRecordTag is the check of a record's tag (HMAC-SHA256 over
// its bucket, key and payload) as every read of a fencing record does:
// a 64-byte key and payloads the size of an operation (300 bytes) and of
// a root with its worker descriptor (700 bytes).
func BenchmarkRecordTag(b *testing.B) {
	k, err := GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	rk := k.RecordKey()
	bucket, key := []byte("operations"), make([]byte, 64)
	for _, size := range []int{300, 700} {
		payload := make([]byte, size)
		tag := rk.Tag(nil, bucket, key, payload)
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if !rk.Verify(tag, bucket, key, payload) {
					b.Fatal("does not verify")
				}
			}
		})
	}
}
