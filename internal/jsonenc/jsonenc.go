// Package jsonenc holds the two JSON encodings that both the store's
// records and the API's types use, written once: bytes as lowercase hex
// and lists of u64 as canonical decimal strings (a u64 does not fit a
// JSON number that every reader parses exactly).
package jsonenc

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// Hex is bytes written as lowercase hex (signatures, digests).
type Hex []byte

func (h Hex) String() string { return hex.EncodeToString(h) }

func (h Hex) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(h)), nil }

func (h *Hex) UnmarshalText(b []byte) error {
	out := make([]byte, hex.DecodedLen(len(b)))
	if _, err := hex.Decode(out, b); err != nil {
		return fmt.Errorf("hex: %w", err)
	}
	*h = out
	return nil
}

// U64s is a list of u64 written as decimal strings; nil is written [].
type U64s []uint64

func (u U64s) MarshalJSON() ([]byte, error) {
	out := []byte{'['}
	for i, v := range u {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = strconv.AppendUint(out, v, 10)
		out = append(out, '"')
	}
	return append(out, ']'), nil
}

// UnmarshalJSON takes canonical decimals only ("07" and "+7" are
// refused), as the contract reads a u64.
func (u *U64s) UnmarshalJSON(b []byte) error {
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return fmt.Errorf("u64 list: %w", err)
	}
	if ss == nil {
		*u = nil
		return nil
	}
	out := make(U64s, len(ss))
	for i, s := range ss {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil || strconv.FormatUint(v, 10) != s {
			return fmt.Errorf("u64 list: %q is not a canonical decimal u64", s)
		}
		out[i] = v
	}
	*u = out
	return nil
}
