package apitypes

import "github.com/cyberia-to/cyber-supervisor/internal/jsonenc"

// Hex is bytes written as lowercase hex (signatures, digests); the
// store's records use the same type (internal/jsonenc).
type Hex = jsonenc.Hex

// U64s is a list of u64 written as decimal strings; nil is written [].
// It reads canonical decimals only ("07" and "+7" are refused), as the
// contract reads a u64.
type U64s = jsonenc.U64s
