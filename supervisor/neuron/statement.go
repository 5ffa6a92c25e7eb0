package neuron

import (
	"encoding/binary"
	"time"
)

// Statement is what a signature covers: a kind (the record type and
// version, e.g. "neuron/attempt/1") and an ordered list of typed fields.
// Its digest is a BIP-340 tagged hash with the tag "cyber/neuron/v1/" +
// kind, so a signature over one kind never verifies as another; every
// field is written with a type byte and (for variable data) a u32
// big-endian length, so no two field lists share an encoding.
type Statement struct {
	kind string
	body []byte
}

// Field type bytes of the encoding (docs/fencing.md).
const (
	fieldText  = 't' // u32 BE length ‖ UTF-8 bytes
	fieldBytes = 'b' // u32 BE length ‖ bytes
	fieldU64   = 'u' // 8 bytes BE
	fieldBool  = 'z' // 1 byte, 0 or 1
	fieldTime  = 'T' // 8 bytes BE: Unix nanoseconds, as u64
)

// StatementTagPrefix prefixes every statement kind in the tagged hash.
const StatementTagPrefix = "cyber/neuron/v1/"

// NewStatement starts a statement of the given kind.
func NewStatement(kind string) *Statement {
	// Room for the largest statements (an attempt's, with its worker
	// descriptor) without growing.
	return &Statement{kind: kind, body: make([]byte, 0, 640)}
}

// Kind of the statement.
func (s *Statement) Kind() string { return s.kind }

func (s *Statement) Text(v string) *Statement {
	s.body = append(s.body, fieldText)
	s.body = binary.BigEndian.AppendUint32(s.body, uint32(len(v)))
	s.body = append(s.body, v...)
	return s
}

func (s *Statement) Bytes(v []byte) *Statement {
	s.body = append(s.body, fieldBytes)
	s.body = binary.BigEndian.AppendUint32(s.body, uint32(len(v)))
	s.body = append(s.body, v...)
	return s
}

func (s *Statement) U64(v uint64) *Statement {
	s.body = append(s.body, fieldU64)
	s.body = binary.BigEndian.AppendUint64(s.body, v)
	return s
}

func (s *Statement) Bool(v bool) *Statement {
	b := byte(0)
	if v {
		b = 1
	}
	s.body = append(s.body, fieldBool, b)
	return s
}

func (s *Statement) Time(t time.Time) *Statement {
	s.body = append(s.body, fieldTime)
	s.body = binary.BigEndian.AppendUint64(s.body, uint64(t.UnixNano()))
	return s
}

// U64s writes a count and then each value.
func (s *Statement) U64s(vs []uint64) *Statement {
	s.U64(uint64(len(vs)))
	for _, v := range vs {
		s.U64(v)
	}
	return s
}

// Texts writes a count and then each text.
func (s *Statement) Texts(vs []string) *Statement {
	s.U64(uint64(len(vs)))
	for _, v := range vs {
		s.Text(v)
	}
	return s
}

// Digest is the 32-byte message a signature signs.
func (s *Statement) Digest() [32]byte {
	return taggedHash(StatementTagPrefix+s.kind, s.body)
}

// Encoding is the statement's body (for documentation and tests).
func (s *Statement) Encoding() []byte { return append([]byte(nil), s.body...) }
