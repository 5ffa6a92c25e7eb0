package neuron

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	// err is the first field that cannot be signed (a time outside
	// the signed range): such a statement is neither signed nor
	// verified.
	err error
}

// Field type bytes of the encoding (docs/fencing.md).
const (
	fieldText  = 't' // u32 BE length ‖ UTF-8 bytes
	fieldBytes = 'b' // u32 BE length ‖ bytes
	fieldU64   = 'u' // 8 bytes BE
	fieldBool  = 'z' // 1 byte, 0 or 1
	fieldTime  = 'T' // 8 bytes BE: Unix nanoseconds, 0 ≤ ns < 2^63, in UTC
)

// The signed times: from the Unix epoch to the last nanosecond whose
// Unix nanoseconds fit an int64 (2262-04-11T23:47:16.854775807Z). In
// this range the encoding is one-to-one with the instant; outside it
// UnixNano wraps (the zero time, the year 2609 and 1970 shared one
// encoding), so such times are refused, and so are times not in UTC
// (another zone would be other record bytes under the same signature).
var (
	minSignedTime = time.Unix(0, 0).UTC()
	maxSignedTime = time.Unix(0, 1<<63-1).UTC()
)

// ErrUnsignableTime: a statement's time is outside the signed range or
// not in UTC.
var ErrUnsignableTime = errors.New("time cannot be signed")

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

// Time writes t as its Unix nanoseconds. A time before 1970, after
// 2262-04-11T23:47:16.854775807Z or with a zone offset makes the
// statement unsignable (Err): Sign refuses it and Verify is false.
func (s *Statement) Time(t time.Time) *Statement {
	if _, offset := t.Zone(); offset != 0 {
		s.fail(fmt.Errorf("%w: %s is not in UTC", ErrUnsignableTime, t.Format(time.RFC3339Nano)))
	} else if t.Before(minSignedTime) || t.After(maxSignedTime) {
		s.fail(fmt.Errorf("%w: %s is outside %s..%s", ErrUnsignableTime, t.Format(time.RFC3339Nano),
			minSignedTime.Format(time.RFC3339), maxSignedTime.Format(time.RFC3339Nano)))
	}
	s.body = append(s.body, fieldTime)
	s.body = binary.BigEndian.AppendUint64(s.body, uint64(t.UnixNano()))
	return s
}

func (s *Statement) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("statement %s: %w", s.kind, err)
	}
}

// Err is why the statement cannot be signed or verified, or nil.
func (s *Statement) Err() error { return s.err }

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

// Digest is the 32-byte message a signature signs. Check Err first: the
// digest of a statement that cannot be signed is never signed nor
// accepted (Sign and Verify refuse it), and means nothing.
func (s *Statement) Digest() [32]byte {
	return taggedHash(StatementTagPrefix+s.kind, s.body)
}

// Encoding is the statement's body (for documentation and tests).
func (s *Statement) Encoding() []byte { return append([]byte(nil), s.body...) }
