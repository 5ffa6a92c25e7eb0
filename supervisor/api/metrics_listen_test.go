package api

import (
	"errors"
	"testing"
)

// Loopback addresses are taken as they are; any other only with
// allowRemote, and a malformed one never.
func TestCheckMetricsAddr(t *testing.T) {
	for _, c := range []struct {
		addr         string
		remote, okay bool
	}{
		{"127.0.0.1:9464", false, true},
		{"127.0.0.2:9464", false, true},
		{"[::1]:9464", false, true},
		{"localhost:9464", false, true},
		{"127.0.0.1:0", false, true},
		{"0.0.0.0:9464", false, false},
		{"[::]:9464", false, false},
		{":9464", false, false},
		{"10.1.2.3:9464", false, false},
		{"[::ffff:127.0.0.1]:9464", false, true},
		{"example.com:9464", false, false},
		{"0.0.0.0:9464", true, true},
		{":9464", true, true},
		{"10.1.2.3:9464", true, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1", true, false},
		{"127.0.0.1:", false, false},
		{"", false, false},
	} {
		err := CheckMetricsAddr(c.addr, c.remote)
		if (err == nil) != c.okay || (err != nil && !errors.Is(err, ErrMetricsAddr)) {
			t.Errorf("CheckMetricsAddr(%q, %v) = %v, want ok %v", c.addr, c.remote, err, c.okay)
		}
	}
}
