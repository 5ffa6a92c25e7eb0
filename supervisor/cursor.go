package supervisor

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// A list's cursor is opaque to clients: base64url (no padding) of
//
//	version (1 byte, 1) | seq (8 bytes BE) | filters (4 bytes) | check (4 bytes)
//
// where seq is the submission seq the next page begins at, filters a
// CRC-32C of the query's filters (a cursor goes on only with the
// filters it was made for) and check a CRC-32C of what precedes it, so
// that a cursor cut short, edited or mangled in a URL is refused as
// invalid_cursor rather than read as another position.
const (
	cursorVersion = 1
	cursorBytes   = 1 + 8 + 4 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cursorAt is the cursor of a page that begins at seq.
func (q *JobQuery) cursorAt(seq uint64) string {
	b := make([]byte, 0, cursorBytes)
	b = append(b, cursorVersion)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint32(b, q.fingerprint())
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return base64.RawURLEncoding.EncodeToString(b)
}

// start is the seq the page begins at: the newest job without a cursor,
// else the cursor's, which must be one this query could have made.
func (q *JobQuery) start() (uint64, error) {
	if q.Cursor == "" {
		return store.SeqNewest, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: %s: %s; start again without it", ErrInvalidCursor, protocol.QuotePrefix(q.Cursor), why)
	}
	b, err := base64.RawURLEncoding.DecodeString(q.Cursor)
	switch {
	case err != nil:
		return 0, bad("not base64url")
	case len(b) != cursorBytes:
		return 0, bad(fmt.Sprintf("%d bytes, not %d", len(b), cursorBytes))
	case crc32.Checksum(b[:cursorBytes-4], castagnoli) != binary.BigEndian.Uint32(b[cursorBytes-4:]):
		return 0, bad("damaged (its checksum does not match)")
	case b[0] != cursorVersion:
		return 0, bad(fmt.Sprintf("version %d, not %d", b[0], cursorVersion))
	case binary.BigEndian.Uint32(b[9:13]) != q.fingerprint():
		return 0, bad("made for other filters")
	}
	return binary.BigEndian.Uint64(b[1:9]), nil
}

// fingerprint is a checksum of the query's filters (not its limit: a
// page size may change between pages).
func (q *JobQuery) fingerprint() uint32 {
	h := crc32.New(castagnoli)
	for _, f := range []string{string(q.State), q.Operation, string(q.Code), q.Program, timeKey(q.Since), timeKey(q.Until)} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return h.Sum32()
}

func timeKey(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}
