package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeUnits are the units a size may carry in either CLI (--memory,
// --artifact-limit). K, M, G and T alone are binary, as systemd's
// MemoryMax= and docker's --memory read them (and lower-case as docker
// accepts); Ki/KiB and the like are binary by name; only KB, MB, GB and
// TB are decimal.
var sizeUnits = map[string]uint64{
	"": 1, "B": 1,
	"K": 1 << 10, "Ki": 1 << 10, "KiB": 1 << 10, "k": 1 << 10,
	"M": 1 << 20, "Mi": 1 << 20, "MiB": 1 << 20, "m": 1 << 20,
	"G": 1 << 30, "Gi": 1 << 30, "GiB": 1 << 30, "g": 1 << 30,
	"T": 1 << 40, "Ti": 1 << 40, "TiB": 1 << 40, "t": 1 << 40,
	"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// ParseBytes reads a positive whole number of bytes with an optional
// unit of sizeUnits: 64M, 64Mi, 64MiB, 1G, 512k, 10MB, 1000.
func ParseBytes(s string) (uint64, error) {
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	num, unit := s[:digits], s[digits:]
	mult, known := sizeUnits[unit]
	v, err := strconv.ParseUint(num, 10, 64)
	if !known || err != nil || v == 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want a positive whole number with an optional unit: K, M, G, T (or Ki, KiB, Mi, MiB, ...: binary) or KB, MB, GB, TB (decimal), B", s)
	}
	return v * mult, nil
}

// FormatBytes is the shortest exact spelling of n in binary units.
func FormatBytes(n uint64) string {
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatUint(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}
