package neuron

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// recordVectorSecret is a fixed secret for the record key's vector.
var recordVectorSecret = bytes.Repeat([]byte{0x5a}, 32)

// TestRecordKeyVector pins the tags the store keeps: a tag is
// HMAC-SHA256, under HKDF-SHA256(secret, no salt, info
// "cyber/neuron/v1/record-key", 32 bytes), of each field preceded by
// its length (u32 BE). Every tag in every store is this function of the
// vault's secret: a change here makes every authenticated record of
// every home unreadable, so it is computed here without the package's
// code and pinned by a vector.
func TestRecordKeyVector(t *testing.T) {
	k, err := keyFromBytes(recordVectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	fields := [][]byte{[]byte("operations"), []byte("op-1"), []byte(`{"argument":"AQ=="}`)}
	got := k.RecordKey().Tag(nil, fields...)

	mac, err := hkdf.Key(sha256.New, recordVectorSecret, nil, "cyber/neuron/v1/record-key", 32)
	if err != nil {
		t.Fatal(err)
	}
	h := hmac.New(sha256.New, mac)
	for _, f := range fields {
		h.Write([]byte{byte(len(f) >> 24), byte(len(f) >> 16), byte(len(f) >> 8), byte(len(f))})
		h.Write(f)
	}
	if want := h.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("tag %x, the construction gives %x", got, want)
	}
	const pinned = "713fe9434e6612283a23b88ffd1e42181a11cdcb014002639b5824872a4b2093"
	if hex.EncodeToString(got) != pinned {
		t.Fatalf("tag %x, pinned %s", got, pinned)
	}
}

// TestRecordKeyTags: the same secret gives the same tags in every
// derivation; another key, another field, other field boundaries, a
// changed or short tag do not verify; Tag appends to what it is given.
func TestRecordKeyTags(t *testing.T) {
	k, err := keyFromBytes(recordVectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	other, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	rk := k.RecordKey()
	tag := rk.Tag(nil, []byte("ab"), []byte("c"))
	if again := k.RecordKey().Tag(nil, []byte("ab"), []byte("c")); !bytes.Equal(again, tag) {
		t.Fatal("two derivations of one secret tag differently")
	}
	if !rk.Verify(tag, []byte("ab"), []byte("c")) {
		t.Fatal("a tag does not verify")
	}
	bad := bytes.Clone(tag)
	bad[7] ^= 1
	for what, ok := range map[string]bool{
		"another key":      other.RecordKey().Verify(tag, []byte("ab"), []byte("c")),
		"another field":    rk.Verify(tag, []byte("ab"), []byte("d")),
		"other boundaries": rk.Verify(tag, []byte("a"), []byte("bc")),
		"one field more":   rk.Verify(tag, []byte("ab"), []byte("c"), nil),
		"a changed tag":    rk.Verify(bad, []byte("ab"), []byte("c")),
		"a short tag":      rk.Verify(tag[:31], []byte("ab"), []byte("c")),
	} {
		if ok {
			t.Errorf("%s verifies", what)
		}
	}
	prefix := []byte("payload\x00")
	out := rk.Tag(prefix, []byte("ab"), []byte("c"))
	if !bytes.Equal(out[:len(prefix)], prefix) || !bytes.Equal(out[len(prefix):], tag) {
		t.Fatalf("Tag appended %x to %q", out, prefix)
	}
}

// TestRecordKeyIsRedacted: the record key never prints, logs or
// marshals what it holds.
func TestRecordKeyIsRedacted(t *testing.T) {
	k, err := keyFromBytes(recordVectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	rk := k.RecordKey()
	mac, _ := hkdf.Key(sha256.New, recordVectorSecret, nil, "cyber/neuron/v1/record-key", 32)
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x"} {
		fmt.Fprintf(&out, verb+"\n", rk)
		fmt.Fprintf(&out, verb+"\n", *rk)
		fmt.Fprintf(&out, verb+"\n", struct{ R *RecordKey }{rk})
	}
	slog.New(slog.NewJSONHandler(&out, nil)).Info("record key", "key", rk)
	if b, err := json.Marshal(rk); err == nil {
		t.Errorf("a record key marshalled to JSON: %s", b)
	}
	if bytes.Contains(out.Bytes(), mac) || strings.Contains(out.String(), hex.EncodeToString(mac)) || !strings.Contains(out.String(), "redacted") {
		t.Fatalf("the record key printed:\n%s", out.String())
	}
}
