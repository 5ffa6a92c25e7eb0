package bolt

import (
	"encoding/binary"
	"hash/crc32"
)

// Every value the store writes (schema 3 on) is a sealed record: the
// payload followed by a 4-byte big-endian CRC-32C of the bucket's name, a
// zero byte, the key and the payload. bbolt checks only its meta pages,
// so without this a flipped bit in a value (an attempt number, a state)
// would be read back as a different but plausible record. Covering the
// bucket and key as well catches a record whose key was damaged: it no
// longer matches its own checksum. The check runs on every read and, for
// the whole file, before the store is opened (pagecheck.go).

// sealSize is what sealing adds to a payload.
const sealSize = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// nameEnd separates the bucket's name from the key (a literal slice here
// would be allocated at every call: the check sums every record).
var nameEnd = []byte{0}

func recordSum(bucket, key, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, bucket)
	c = crc32.Update(c, castagnoli, nameEnd)
	c = crc32.Update(c, castagnoli, key)
	return crc32.Update(c, castagnoli, payload)
}

// seal returns a new slice: bbolt keeps a value until its transaction
// commits, so it must not share the caller's memory.
func seal(bucket, key, payload []byte) []byte {
	out := make([]byte, len(payload), len(payload)+sealSize)
	copy(out, payload)
	return binary.BigEndian.AppendUint32(out, recordSum(bucket, key, payload))
}

// sealOwned is seal for a payload nobody changes after: the checksum is
// appended to it, in place when its capacity allows. The payload's own
// bytes stay as they were, so a caller may keep them as well.
func sealOwned(bucket, key, payload []byte) []byte {
	return binary.BigEndian.AppendUint32(payload[:len(payload):cap(payload)], recordSum(bucket, key, payload))
}

// unseal returns the payload of a sealed value (sharing its memory), or
// false if the value is not one: too short, or the checksum differs.
func unseal(bucket, key, value []byte) ([]byte, bool) {
	if len(value) < sealSize {
		return nil, false
	}
	n := len(value) - sealSize
	payload := value[:n]
	return payload, binary.BigEndian.Uint32(value[n:]) == recordSum(bucket, key, payload)
}
