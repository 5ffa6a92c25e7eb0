package protocol

import "testing"

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]uint64{
		"64MiB": 64 << 20, "64Mi": 64 << 20, "64M": 64 << 20, "64m": 64 << 20,
		"512KiB": 512 << 10, "512K": 512 << 10, "512k": 512 << 10, "512Ki": 512 << 10,
		"1GiB": 1 << 30, "1G": 1 << 30, "1g": 1 << 30, "1Gi": 1 << 30, "2T": 2 << 40, "2TiB": 2 << 40,
		"1000": 1000, "10MB": 10e6, "3GB": 3e9, "1TB": 1e12, "7B": 7,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
		if got, _ := ParseBytes(FormatBytes(want)); got != want {
			t.Errorf("FormatBytes(%d) = %q does not read back", want, FormatBytes(want))
		}
	}
	for _, in := range []string{"", "0", "0M", "-1MiB", "1.5MiB", "MiB", "M", " 5MiB", "5MiB ", "5 MiB", "5mb", "5Mb", "5iB", "5MiBB", "5MiB5", "99999999999999999999GiB", "4194305T"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) accepted", in)
		}
	}
}
