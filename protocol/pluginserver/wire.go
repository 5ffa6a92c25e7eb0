package pluginserver

import (
	"math"
	"unicode/utf8"
)

// The protobuf wire format, as much of it as the messages here need. The
// decoder follows proto3's rules as google.golang.org/protobuf applies them,
// so that a message means the same to the worker as to the supervisor's
// generated code (wire_test.go checks both against each other):
//   - unknown fields, and known fields of another wire type, are skipped;
//   - a scalar seen twice keeps the last value; a message seen twice is
//     merged; oneof members replace each other;
//   - string fields must be valid UTF-8.

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireStart   = 3 // group start (deprecated, skipped)
	wireEnd     = 4
	wireFixed32 = 5
)

// maxFieldNumber is protobuf's largest field number.
const maxFieldNumber = 1<<29 - 1

// maxGroupDepth bounds nested groups in a skipped field.
const maxGroupDepth = 100

// wireError is a malformed message.
type wireError string

func (e wireError) Error() string { return "malformed message: " + string(e) }

const (
	errTruncated = wireError("truncated")
	errOverflow  = wireError("varint overflows 64 bits")
	errBadField  = wireError("invalid field number")
	errWireType  = wireError("invalid wire type")
	errGroup     = wireError("unbalanced or too deeply nested group")
	errUTF8      = wireError("string field is not valid UTF-8")
)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendTag(b []byte, num int, typ int) []byte {
	return appendVarint(b, uint64(num)<<3|uint64(typ))
}

// appendBytesField appends a length-delimited field; proto3 leaves out an
// empty one.
func appendBytesField(b []byte, num int, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = appendTag(b, num, wireBytes)
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}

// appendMessageField appends an embedded message, present even when empty
// (a set oneof member).
func appendMessageField(b []byte, num int, msg []byte) []byte {
	b = appendTag(b, num, wireBytes)
	b = appendVarint(b, uint64(len(msg)))
	return append(b, msg...)
}

func consumeVarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b); i++ {
		if i == 9 {
			// The tenth byte may only carry the top bit.
			if b[i] > 1 {
				return 0, 0, errOverflow
			}
			return v | uint64(b[i])<<63, 10, nil
		}
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errTruncated
}

// field is one decoded field: its number, wire type, and for varints the
// value, for length-delimited fields the bytes.
type field struct {
	num   int
	typ   int
	value uint64
	bytes []byte
}

// fields walks b one field at a time. visit sees every well-formed field,
// groups excepted (they are skipped whole).
func fields(b []byte, visit func(f field) error) error {
	for len(b) > 0 {
		f, n, err := consumeField(b, 0)
		if err != nil {
			return err
		}
		b = b[n:]
		if f.typ == wireStart {
			continue
		}
		if err := visit(f); err != nil {
			return err
		}
	}
	return nil
}

func consumeField(b []byte, depth int) (field, int, error) {
	tag, n, err := consumeVarint(b)
	if err != nil {
		return field{}, 0, err
	}
	num, typ := tag>>3, int(tag&7)
	// The generated code holds the message's own fields to protobuf's
	// range (1 to 2^29-1); inside a group it skips, protowire takes any
	// number that fits an int32. The same bytes are refused by both or
	// by neither (FuzzDecodeRunInput).
	limit := uint64(maxFieldNumber)
	if depth > 0 {
		limit = math.MaxInt32
	}
	if num == 0 || num > limit {
		return field{}, 0, errBadField
	}
	f := field{num: int(num), typ: typ}
	rest := b[n:]
	switch typ {
	case wireVarint:
		v, m, err := consumeVarint(rest)
		if err != nil {
			return field{}, 0, err
		}
		f.value = v
		return f, n + m, nil
	case wireFixed64:
		if len(rest) < 8 {
			return field{}, 0, errTruncated
		}
		return f, n + 8, nil
	case wireFixed32:
		if len(rest) < 4 {
			return field{}, 0, errTruncated
		}
		return f, n + 4, nil
	case wireBytes:
		l, m, err := consumeVarint(rest)
		if err != nil {
			return field{}, 0, err
		}
		if l > uint64(len(rest)-m) {
			return field{}, 0, errTruncated
		}
		f.bytes = rest[m : m+int(l)]
		return f, n + m + int(l), nil
	case wireStart:
		if depth >= maxGroupDepth {
			return field{}, 0, errGroup
		}
		used := n
		for {
			if len(b[used:]) == 0 {
				return field{}, 0, errTruncated
			}
			g, m, err := consumeField(b[used:], depth+1)
			if err != nil {
				return field{}, 0, err
			}
			used += m
			if g.typ == wireEnd {
				if g.num != f.num {
					return field{}, 0, errGroup
				}
				return f, used, nil
			}
		}
	case wireEnd:
		if depth == 0 {
			return field{}, 0, errGroup
		}
		return f, n, nil
	default:
		return field{}, 0, errWireType
	}
}

func utf8String(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", errUTF8
	}
	return string(b), nil
}
