package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestU64sAreCanonicalDecimals(t *testing.T) {
	b, err := json.Marshal(U64s{0, 7, 1<<64 - 1})
	if err != nil || string(b) != `["0","7","18446744073709551615"]` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	if b, _ := json.Marshal(U64s(nil)); string(b) != "[]" {
		t.Fatalf("nil marshals as %s, want []", b)
	}
	var u U64s
	if err := json.Unmarshal([]byte(`["0","7","18446744073709551615"]`), &u); err != nil || len(u) != 3 || u[2] != 1<<64-1 {
		t.Fatalf("unmarshal: %v, %v", u, err)
	}
	for _, bad := range []string{`["07"]`, `["+7"]`, `["18446744073709551616"]`, `[7]`, `"7"`} {
		if err := json.Unmarshal([]byte(bad), &u); err == nil || !strings.HasPrefix(err.Error(), "u64 list") {
			t.Errorf("%s: err %v, want a u64 list error", bad, err)
		}
	}
}

func TestHexRoundTrip(t *testing.T) {
	b, err := json.Marshal(Hex{0xde, 0xad, 0x01})
	if err != nil || string(b) != `"dead01"` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var h Hex
	if err := json.Unmarshal(b, &h); err != nil || h.String() != "dead01" {
		t.Fatalf("unmarshal: %v, %v", h, err)
	}
	if err := json.Unmarshal([]byte(`"xyz"`), &h); err == nil || !strings.Contains(err.Error(), "hex") {
		t.Fatalf("bad hex: err %v", err)
	}
}
