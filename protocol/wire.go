package protocol

import "strconv"

// decimal marshals a u64 the contract's way: a JSON string of canonical
// decimal digits.
type decimal uint64

func (d decimal) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(d), 10)
	return append(b, '"'), nil
}

// decimals converts a list, keeping nil as nil (JSON null) and an empty
// list as [] so that the two stay distinguishable on the wire.
func decimals(vs []uint64) []decimal {
	if vs == nil {
		return nil
	}
	out := make([]decimal, len(vs))
	for i, v := range vs {
		out[i] = decimal(v)
	}
	return out
}

// nonNil turns nil into an empty list for fields that are never null.
func nonNil(vs []uint64) []uint64 {
	if vs == nil {
		return []uint64{}
	}
	return vs
}
