package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
)

// The canonical form of a job spec is encoding/json's encoding of
// jobSpecWire, compact and without HTML escaping. Its artifact, the last
// key and the only part that may be large (a verify job's certificate
// in base64, up to 48 MiB), is written here rather than by
// encoding/json, whose buffer grows by doubling, is kept in a pool, and
// was copied out once more: the bytes are the same (standard padded
// base64 in quotes), written once into a slice of their exact size, or
// streamed (WriteJSON). TestJobSpecJSONIsEncodingJSONs holds the two
// encodings to the same bytes.

// artifactNull is how the encoding of a spec without its artifact ends.
const artifactNull = `"artifact":null}`

// MarshalJSON writes the canonical form: fixed key order, compact, u64s as
// decimal strings, binary as standard base64, every key present
// (state_context and absent options as null). Equal specs marshal to equal
// bytes, which is what job-id reuse is judged by.
func (s JobSpec) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil) }

// TrailerRoom is the spare capacity AppendJSON leaves after the
// canonical form when it grows dst: the supervisor's store appends its
// record's checksum to a frozen spec there instead of copying it.
const TrailerRoom = 8

// AppendJSON appends the canonical form to dst, growing it at most once,
// with TrailerRoom to spare (the artifact is not copied through a buffer
// of its own).
func (s JobSpec) AppendJSON(dst []byte) ([]byte, error) {
	head, err := s.headJSON()
	if err != nil {
		return nil, err
	}
	n := len(head)
	if s.Artifact != nil {
		n += 2 + base64.StdEncoding.EncodedLen(len(s.Artifact)) - len("null")
	}
	dst = grow(dst, n+TrailerRoom)
	if s.Artifact == nil {
		return append(dst, head...), nil
	}
	dst = append(dst, head[:len(head)-len("null}")]...)
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, s.Artifact)
	return append(dst, '"', '}'), nil
}

// grow returns dst with room for n more bytes, allocating at most once
// and exactly that. slices.Grow allocates a temporary of n bytes besides
// under the race detector, whose build does not elide it.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	b := make([]byte, len(dst), len(dst)+n)
	copy(b, dst)
	return b
}

// WriteJSON writes the canonical form to w without holding it whole.
func (s JobSpec) WriteJSON(w io.Writer) error {
	head, err := s.headJSON()
	if err != nil {
		return err
	}
	if s.Artifact == nil {
		_, err := w.Write(head)
		return err
	}
	if _, err := w.Write(head[:len(head)-len("null}")]); err != nil {
		return err
	}
	if _, err := w.Write([]byte{'"'}); err != nil {
		return err
	}
	enc := base64.NewEncoder(base64.StdEncoding, w)
	if _, err := enc.Write(s.Artifact); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = w.Write([]byte(`"}`))
	return err
}

// CanonicalSHA256 is the SHA-256 of the canonical form, computed
// without holding it.
func (s JobSpec) CanonicalSHA256() ([32]byte, error) {
	h := sha256.New()
	var sum [32]byte
	if err := s.WriteJSON(h); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// headJSON is the canonical form of s without its artifact: it ends in
// artifactNull.
func (s JobSpec) headJSON() ([]byte, error) {
	w := jobSpecWire{
		Contract:       s.Contract,
		JobID:          s.JobID,
		Operation:      s.Operation,
		Profile:        s.Profile,
		Program:        programWire{Bundle: nonNilBytes(s.Program.Bundle)},
		Inputs:         decimals(nonNil(s.Inputs)),
		ExpectedOutput: decimals(s.ExpectedOutput),
		Limits:         s.Limits.wire(),
		ArtifactRef:    s.ArtifactRef.wire(),
	}
	if s.Program.Identity != nil {
		iw := s.Program.Identity.wire()
		w.Program.Identity = &iw
	}
	b, err := marshalCompact(w)
	if err == nil && !bytes.HasSuffix(b, []byte(artifactNull)) {
		return nil, Errorf(CodeInternalError, "job spec encoding: the artifact is not its last key")
	}
	return b, err
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// marshalCompact is json.Marshal without HTML escaping, so that text reads
// as written; the output is still deterministic.
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
