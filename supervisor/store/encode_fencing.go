package store

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Hand-written encoders for the records every act writes (invocation,
// operation, attempt, claim, outcome, reservation). Each appends exactly
// the bytes encoding/json writes for the record (TestEncodersMatchJSON
// compares them on random records): the file's format stays what the
// struct tags say, only reflection, the compaction of the descriptor's
// own encoding and the intermediate allocations are gone. Whatever is
// not the plain case (a string that needs escaping, a time json refuses,
// a descriptor that needs HTML escaping, an error value) is handed to
// encoding/json for that value alone, so the output is its by
// construction there too.

// appendRecorder is a record with a hand-written encoder. ok is false
// when the record holds something only encoding/json may decide (a time
// it refuses): the caller then encodes the whole record with it.
type appendRecorder interface {
	appendJSON(b []byte) (out []byte, ok bool)
}

// EncodeRecord is json.Marshal(v), faster for the hot records. It is the
// encoding bbolt's driver writes and Trust.Preverify remembers as
// verified, so both must take it from here.
func EncodeRecord(v any) ([]byte, error) {
	if r, ok := v.(appendRecorder); ok {
		// 4 spare bytes: seal appends its checksum without a copy.
		if b, ok := r.appendJSON(make([]byte, 0, 512)); ok {
			return b, nil
		}
	}
	return json.Marshal(v)
}

// jsonSafe[c] is true for the ASCII bytes encoding/json writes as they
// are inside a string (with its HTML escaping, the default).
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonSafe[s[i]] {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendQuotedU64 is a uint64 with the ",string" option.
func appendQuotedU64(b []byte, v uint64) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, v, 10)
	return append(b, '"')
}

// appendBase64 is a []byte as encoding/json writes it (null when nil).
func appendBase64(b []byte, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// appendHexText is a value whose MarshalText is lowercase hex (Hex and
// the neuron's 32-byte ids).
func appendHexText(b []byte, v []byte) []byte {
	b = append(b, '"')
	b = hex.AppendEncode(b, v)
	return append(b, '"')
}

func appendU64List(b []byte, u U64s) []byte {
	b = append(b, '[')
	for i, v := range u {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuotedU64(b, v)
	}
	return append(b, ']')
}

// appendTime is time.Time.MarshalJSON; false where it fails (a year
// outside 0..9999, a zone offset of 24 hours or more).
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	n0 := len(b)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	s := b[n0+1:]
	if len(s) < 5 || s[4] != '-' {
		return b, false
	}
	if s[len(s)-1] != 'Z' {
		// ±hh:mm at the end.
		if len(s) < 6 {
			return b, false
		}
		c := s[len(s)-6]
		h := s[len(s)-5 : len(s)-3]
		if ('0' <= c && c <= '9') || (h[0]-'0')*10+(h[1]-'0') >= 24 {
			return b, false
		}
	}
	return append(b, '"'), true
}

// appendDescriptor is a worker descriptor as a field of a record:
// encoding/json compacts a MarshalJSON result and escapes HTML in it, so
// an encoding with any of <, > and & (or U+2028, U+2029) goes through it.
func appendDescriptor(b []byte, d *protocol.WorkerDescriptor) ([]byte, bool) {
	if d == nil {
		return append(b, "null"...), true
	}
	n0 := len(b)
	b, err := d.AppendJSON(b)
	if err != nil {
		return b, false
	}
	if needsHTMLEscape(b[n0:]) {
		q, err := json.Marshal(json.RawMessage(b[n0:]))
		if err != nil {
			return b, false
		}
		b = append(b[:n0], q...)
	}
	return b, true
}

// needsHTMLEscape reports whether encoding/json's compaction would
// change b: it has <, > or &, or a byte that may start U+2028 or U+2029
// (0xE2: then the bytes go through json, which decides).
func needsHTMLEscape(b []byte) bool {
	for _, c := range b {
		switch c {
		case '<', '>', '&', 0xE2:
			return true
		}
	}
	return false
}

// appendError is an error field (not nil) as json.Marshal writes it.
func appendError(b []byte, e *protocol.Error) ([]byte, bool) {
	q, err := json.Marshal(e)
	if err != nil {
		return b, false
	}
	return append(b, q...), true
}

func (inv *Invocation) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, inv.ID)
	b = append(b, `,"seq":`...)
	b = appendQuotedU64(b, inv.Seq)
	b = append(b, `,"neuron":`...)
	b = appendHexText(b, inv.Neuron[:])
	b = append(b, `,"network":`...)
	b = appendJSONString(b, inv.Network)
	b = append(b, `,"prog":`...)
	b = appendJSONString(b, inv.Prog)
	b = append(b, `,"prog_revision":`...)
	b = appendQuotedU64(b, inv.ProgRevision)
	b = append(b, `,"inputs":`...)
	b = appendU64List(b, inv.Inputs)
	b = append(b, `,"epoch":`...)
	b = appendQuotedU64(b, inv.Epoch)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(inv.Status))
	if inv.Parent != "" {
		b = append(b, `,"parent":`...)
		b = appendJSONString(b, inv.Parent)
	}
	b = append(b, `,"limit":`...)
	b = appendQuotedU64(b, inv.Limit)
	b = append(b, `,"charged":`...)
	b = appendQuotedU64(b, inv.Charged)
	if inv.Delegated != 0 {
		b = append(b, `,"delegated":`...)
		b = appendQuotedU64(b, inv.Delegated)
	}
	b = append(b, `,"held":`...)
	b = appendQuotedU64(b, inv.Held)
	b = append(b, `,"ordinal":`...)
	b = appendQuotedU64(b, inv.Ordinal)
	if inv.Pending != "" {
		b = append(b, `,"pending":`...)
		b = appendJSONString(b, inv.Pending)
	}
	if len(inv.Result) != 0 {
		b = append(b, `,"result":`...)
		b = appendBase64(b, inv.Result)
	}
	if len(inv.Output) != 0 {
		b = append(b, `,"output":`...)
		b = appendU64List(b, inv.Output)
	}
	ok := true
	if inv.Error != nil {
		b = append(b, `,"error":`...)
		if b, ok = appendError(b, inv.Error); !ok {
			return b, false
		}
	}
	b = append(b, `,"created":`...)
	if b, ok = appendTime(b, inv.Created); !ok {
		return b, false
	}
	b = append(b, `,"updated":`...)
	if b, ok = appendTime(b, inv.Updated); !ok {
		return b, false
	}
	return append(b, '}'), true
}

func (op *Operation) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, op.ID)
	b = append(b, `,"neuron":`...)
	b = appendHexText(b, op.Neuron[:])
	b = append(b, `,"network":`...)
	b = appendJSONString(b, op.Network)
	b = append(b, `,"prog":`...)
	b = appendJSONString(b, op.Prog)
	b = append(b, `,"invocation":`...)
	b = appendJSONString(b, op.Invocation)
	b = append(b, `,"ordinal":`...)
	b = appendQuotedU64(b, op.Ordinal)
	b = append(b, `,"tag":`...)
	b = appendQuotedU64(b, op.Tag)
	b = append(b, `,"argument":`...)
	b = appendBase64(b, op.Argument)
	b = append(b, `,"policy":`...)
	b = appendHexText(b, op.Policy[:])
	b = append(b, `,"epoch":`...)
	b = appendQuotedU64(b, op.Epoch)
	b = append(b, `,"stage":`...)
	b = strconv.AppendUint(b, uint64(op.Stage), 10)
	if op.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendUint(b, uint64(op.Attempt), 10)
	}
	var ok bool
	b = append(b, `,"created":`...)
	if b, ok = appendTime(b, op.Created); !ok {
		return b, false
	}
	b = append(b, `,"updated":`...)
	if b, ok = appendTime(b, op.Updated); !ok {
		return b, false
	}
	return append(b, '}'), true
}

func (a *ActAttempt) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"operation":`...)
	b = appendJSONString(b, a.Operation)
	b = append(b, `,"n":`...)
	b = strconv.AppendUint(b, uint64(a.N), 10)
	b = append(b, `,"neuron":`...)
	b = appendHexText(b, a.Neuron[:])
	b = append(b, `,"network":`...)
	b = appendJSONString(b, a.Network)
	b = append(b, `,"prog":`...)
	b = appendJSONString(b, a.Prog)
	b = append(b, `,"invocation":`...)
	b = appendJSONString(b, a.Invocation)
	b = append(b, `,"tag":`...)
	b = appendQuotedU64(b, a.Tag)
	b = append(b, `,"operation_digest":`...)
	b = appendHexText(b, a.OpDigest)
	b = append(b, `,"executor":`...)
	b = appendJSONString(b, a.Executor)
	b = append(b, `,"worker":`...)
	var ok bool
	if b, ok = appendDescriptor(b, a.Worker); !ok {
		return b, false
	}
	b = append(b, `,"generation":`...)
	b = appendQuotedU64(b, a.Generation)
	b = append(b, `,"policy":`...)
	b = appendHexText(b, a.Policy[:])
	b = append(b, `,"epoch":`...)
	b = appendQuotedU64(b, a.Epoch)
	b = append(b, `,"created":`...)
	if b, ok = appendTime(b, a.Created); !ok {
		return b, false
	}
	b = append(b, `,"authorization":`...)
	b = appendHexText(b, a.Authorization)
	return append(b, '}'), true
}

func (c *Claim) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"operation":`...)
	b = appendJSONString(b, c.Operation)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendUint(b, uint64(c.Attempt), 10)
	b = append(b, `,"generation":`...)
	b = appendQuotedU64(b, c.Generation)
	b = append(b, `,"worker":`...)
	var ok bool
	if b, ok = appendDescriptor(b, &c.Worker); !ok {
		return b, false
	}
	b = append(b, `,"created":`...)
	if b, ok = appendTime(b, c.Created); !ok {
		return b, false
	}
	b = append(b, `,"signature":`...)
	b = appendHexText(b, c.Signature)
	return append(b, '}'), true
}

func (o *Outcome) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"operation":`...)
	b = appendJSONString(b, o.Operation)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendUint(b, uint64(o.Attempt), 10)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(o.Kind))
	if len(o.Value) != 0 {
		b = append(b, `,"value":`...)
		b = appendBase64(b, o.Value)
	}
	if o.Message != "" {
		b = append(b, `,"message":`...)
		b = appendJSONString(b, o.Message)
	}
	b = append(b, `,"source":`...)
	b = appendJSONString(b, o.Source)
	b = append(b, `,"recorded":`...)
	b, ok := appendTime(b, o.Recorded)
	if !ok {
		return b, false
	}
	return append(b, '}'), true
}

func (r *Reservation) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"invocation":`...)
	b = appendJSONString(b, r.Invocation)
	b = append(b, `,"steps":`...)
	b = appendQuotedU64(b, r.Steps)
	b = append(b, `,"base":`...)
	b = appendQuotedU64(b, r.Base)
	b = append(b, `,"boot":`...)
	b = appendJSONString(b, r.Boot)
	b = append(b, `,"created":`...)
	b, ok := appendTime(b, r.Created)
	if !ok {
		return b, false
	}
	return append(b, '}'), true
}
