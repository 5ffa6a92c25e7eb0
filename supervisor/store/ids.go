package store

import (
	"encoding/binary"
	"encoding/hex"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/hemera"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
)

// Ids are Hemera particles of a domain tag and the fields they derive
// from, as 64 hex digits. They locate records; they grant nothing.

func derive(domain string, parts ...[]byte) string {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(len(domain)))
	b = append(b, domain...)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	if id, ok := derived.get(string(b)); ok {
		return id
	}
	d := hemera.Hash(b).Bytes()
	id := hex.EncodeToString(d[:])
	derived.put(string(b), id)
	return id
}

// derived remembers recent ids: the engine derives an operation's id
// before the transaction that creates it, and the store's check of the
// id inside that transaction (the group commit's one writer) then costs
// a map lookup instead of a Hemera permutation.
var derived = &idMemo{m: map[string]string{}}

type idMemo struct {
	mu sync.Mutex
	m  map[string]string
}

const maxDerived = 4096

func (c *idMemo) get(k string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *idMemo) put(k, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxDerived {
		clear(c.m)
	}
	c.m[k] = v
}

func u64Bytes(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// ProgID is a prog's id: its neuron and program identity.
func ProgID(n neuron.ID, program neuron.Particle) string {
	return derive("cyber/prog/1", n[:], program[:])
}

// InvocationID is an invocation's id: neuron, prog and the store's
// invocation sequence number.
func InvocationID(n neuron.ID, prog string, seq uint64) string {
	return derive("cyber/invocation/1", n[:], []byte(prog), u64Bytes(seq))
}

// OperationID is an operation's id: (neuron, prog, invocation, ordinal).
func OperationID(n neuron.ID, prog, invocation string, ordinal uint64) string {
	return derive("cyber/operation/1", n[:], []byte(prog), []byte(invocation), u64Bytes(ordinal))
}
