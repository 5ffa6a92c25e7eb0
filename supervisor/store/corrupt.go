package store

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrCorrupt: the store file is damaged. The supervisor refuses to start
// on a damaged store (docs/store.md, "A damaged store").
var ErrCorrupt = errors.New("store is damaged")

// CorruptError says where a store file is damaged: a page of the file, a
// record (bucket and key), or both.
type CorruptError struct {
	File   string
	Page   uint64 // the damaged page, when HasPage
	Bucket string // the damaged record's bucket, when not ""
	Key    []byte // and its key
	Reason string
	// HasPage is false for damage found in a record read through bbolt,
	// which does not say which page held it.
	HasPage bool
}

func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("store ")
	b.WriteString(e.File)
	b.WriteString(" is damaged:")
	if e.HasPage {
		b.WriteString(" page ")
		b.WriteString(strconv.FormatUint(e.Page, 10))
	}
	if e.Bucket != "" {
		if e.HasPage {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " record %s/%s", e.Bucket, PrintableKey(e.Key))
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// RecordName names a record as the store's errors and its check do:
// bucket/key, the key printed by PrintableKey.
func RecordName(bucket, key []byte) string { return string(bucket) + "/" + PrintableKey(key) }

// PrintableKey shows a key as text when it is short printable ASCII (job
// ids are), and as a bounded hex prefix otherwise (attempt and event keys
// end in binary numbers).
func PrintableKey(k []byte) string {
	printable := len(k) <= 128
	for _, c := range k {
		if c < 0x21 || c > 0x7e {
			printable = false
			break
		}
	}
	if printable {
		return strconv.Quote(string(k))
	}
	const max = 48
	if len(k) > max {
		return fmt.Sprintf("0x%x… (%d bytes)", k[:max], len(k))
	}
	return fmt.Sprintf("0x%x", k)
}
