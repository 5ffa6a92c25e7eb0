package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// recordGen makes random records whose fields reach every branch of the
// hand-written encoders: strings that need escaping (quotes, controls,
// HTML, U+2028, invalid UTF-8), times json refuses, nil, empty and full
// lists, zero and non-zero omitempty fields, descriptors with HTML.
type recordGen struct{ r *rand.Rand }

func (g recordGen) str() string {
	pieces := []string{"a", "inv-", "0123456789abcdef", "\"", "\\", "<", ">", "&", "\n", "\t", "\b", "\f", "\r",
		"\x00", "\x1f", "\x7f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "𝄞", " ", "/"}
	if g.r.IntN(3) == 0 {
		return ""
	}
	var b []byte
	for range g.r.IntN(6) + 1 {
		if g.r.IntN(2) == 0 {
			b = append(b, "op"...)
		} else {
			b = append(b, pieces[g.r.IntN(len(pieces))]...)
		}
	}
	return string(b)
}

func (g recordGen) u64() uint64 {
	switch g.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return ^uint64(0)
	default:
		return g.r.Uint64() >> g.r.IntN(64)
	}
}

func (g recordGen) bytes() []byte {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, g.r.IntN(40)+1)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func (g recordGen) u64s() U64s {
	switch g.r.IntN(3) {
	case 0:
		return nil
	case 1:
		return U64s{}
	}
	u := make(U64s, g.r.IntN(5)+1)
	for i := range u {
		u[i] = g.u64()
	}
	return u
}

func (g recordGen) time() time.Time {
	switch g.r.IntN(8) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(10000+g.r.IntN(5), 1, 1, 0, 0, 0, 0, time.UTC) // json refuses it
	case 2:
		return time.Date(-g.r.IntN(50), 3, 1, 0, 0, 0, 0, time.UTC)
	case 3:
		return time.Unix(g.r.Int64N(1<<34), g.r.Int64N(1e9)).In(time.FixedZone("x", 24*3600+g.r.IntN(7200)))
	case 4:
		return time.Unix(g.r.Int64N(1<<34), g.r.Int64N(1e9)).In(time.FixedZone("y", g.r.IntN(48*3600)-24*3600))
	case 5:
		return time.Unix(g.r.Int64N(1<<34), 0)
	}
	return time.Unix(g.r.Int64N(1<<34), g.r.Int64N(1e9)).UTC()
}

func (g recordGen) id() (id [32]byte) {
	for i := range id {
		id[i] = byte(g.r.Uint32())
	}
	return id
}

func (g recordGen) descriptor() *protocol.WorkerDescriptor {
	d := &protocol.WorkerDescriptor{Machine: protocol.MachineNativeGo, Environment: protocol.EnvHostAct,
		ProofProfile: protocol.ProfileNone, Network: "net" + g.str(), MaxArgumentBytes: g.u64(),
		Executor: protocol.Executor{Warrior: "w", Version: g.str(), Backend: protocol.BackendEmbeddedSync,
			WorkerID: g.str(), DeviceID: "d", BootID: g.str()}}
	if g.r.IntN(2) == 0 {
		d.Acts = []uint64(g.u64s())
	}
	return d
}

func (g recordGen) perr() *protocol.Error {
	if g.r.IntN(2) == 0 {
		return nil
	}
	return &protocol.Error{Code: protocol.Code(g.str()), Message: g.str(), Retryable: g.r.IntN(2) == 0}
}

func (g recordGen) records() []any {
	inv := &Invocation{ID: g.str(), Seq: g.u64(), Neuron: neuron.ID(g.id()), Network: g.str(), Prog: g.str(),
		ProgRevision: g.u64(), Inputs: g.u64s(), Epoch: g.u64(), Status: InvocationStatus(g.str()), Parent: g.str(),
		Limit: g.u64(), Charged: g.u64(), Delegated: g.u64(), Held: g.u64(), Ordinal: g.u64(), Pending: g.str(),
		Result: g.bytes(), Output: g.u64s(), Error: g.perr(), Created: g.time(), Updated: g.time()}
	op := &Operation{ID: g.str(), Neuron: neuron.ID(g.id()), Network: g.str(), Prog: g.str(), Invocation: g.str(),
		Ordinal: g.u64(), Tag: g.u64(), Argument: g.bytes(), Policy: neuron.Particle(g.id()), Epoch: g.u64(),
		Stage: Stage(g.r.IntN(256)), Attempt: uint32(g.u64()), Created: g.time(), Updated: g.time()}
	a := &ActAttempt{Operation: g.str(), N: uint32(g.u64()), Neuron: neuron.ID(g.id()), Network: g.str(), Prog: g.str(),
		Invocation: g.str(), Tag: g.u64(), OpDigest: g.bytes(), Executor: g.str(), Generation: g.u64(),
		Policy: neuron.Particle(g.id()), Epoch: g.u64(), Created: g.time(), Authorization: g.bytes()}
	if g.r.IntN(3) != 0 {
		a.Worker = g.descriptor()
	}
	c := &Claim{Operation: g.str(), Attempt: uint32(g.u64()), Generation: g.u64(), Worker: *g.descriptor(),
		Created: g.time(), Signature: g.bytes()}
	o := &Outcome{Operation: g.str(), Attempt: uint32(g.u64()), Kind: OutcomeKind(g.str()), Value: g.bytes(),
		Message: g.str(), Source: g.str(), Recorded: g.time()}
	r := &Reservation{Invocation: g.str(), Steps: g.u64(), Base: g.u64(), Boot: g.str(), Created: g.time()}
	return []any{inv, op, a, c, o, r}
}

// TestEncodersMatchJSON: every hand-written encoder writes exactly what
// encoding/json writes, and fails where it fails.
func TestEncodersMatchJSON(t *testing.T) {
	g := recordGen{rand.New(rand.NewPCG(1, 2))}
	fast := 0
	for i := range 20000 {
		for _, v := range g.records() {
			want, werr := json.Marshal(v)
			got, gerr := EncodeRecord(v)
			if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("case %d %T:\nencoding/json %s (%v)\nhand-written  %s (%v)", i, v, want, werr, got, gerr)
			}
			if _, ok := v.(appendRecorder).appendJSON(nil); ok {
				fast++
			}
		}
	}
	// The random records must reach the hand-written path, not only the
	// fallback.
	if fast < 20000 {
		t.Fatalf("only %d records took the hand-written path", fast)
	}
}

// TestEncodersTypical: the records of a real act (a plain descriptor,
// UTC times) take the hand-written path whole.
func TestEncodersTypical(t *testing.T) {
	now := time.Now().UTC()
	d := protocol.WorkerDescriptor{Machine: protocol.MachineNativeGo, Environment: protocol.EnvHostAct,
		ProofProfile: protocol.ProfileNone, Network: "test", MaxArgumentBytes: 4096,
		Executor: protocol.Executor{Warrior: "cyber-supervisor", Version: "1", Backend: protocol.BackendEmbeddedSync,
			WorkerID: "w", DeviceID: "d", BootID: "b"}, Acts: []uint64{1, 6}}
	for _, v := range []appendRecorder{
		&Invocation{ID: "i", Inputs: U64s{1}, Status: InvocationRunning, Created: now, Updated: now},
		&Operation{ID: "o", Argument: []byte{1}, Created: now, Updated: now},
		&ActAttempt{Operation: "o", N: 1, Worker: &d, Created: now, Authorization: []byte{1}},
		&Claim{Operation: "o", Attempt: 1, Worker: d, Created: now, Signature: []byte{2}},
		&Outcome{Operation: "o", Attempt: 1, Kind: OutcomeValue, Value: []byte{3}, Source: "act", Recorded: now},
		&Reservation{Invocation: "i", Steps: 10, Created: now},
	} {
		got, ok := v.appendJSON(nil)
		want, err := json.Marshal(v)
		if !ok || err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%T: %v %v\n%s\n%s", v, ok, err, got, want)
		}
	}
}
