// Package limitstest holds test support for code that runs processes in
// limits groups: the isolation gate (skip, or fail under
// REQUIRE_ISOLATION=1), a per-test Manager with a leak check, and checks
// that recorded processes are really gone. The sandbox and integration
// tests use it too.
package limitstest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// RequireEnv is the environment variable that turns a missing isolation
// capability from a skip into a failure. CI sets REQUIRE_ISOLATION=1.
const RequireEnv = "REQUIRE_ISOLATION"

// Required reports whether missing isolation must fail tests.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// RequireIsolation is the one gate for tests that need a capability: when
// ok is false it skips with the reason, or fails with it when
// REQUIRE_ISOLATION=1 — a missing capability in CI is a failure, never a
// silent skip.
func RequireIsolation(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if ok {
		return
	}
	if Required() {
		t.Fatalf("isolation required ("+RequireEnv+"=1) but unavailable: "+format, args...)
	}
	t.Skipf("skipping, isolation unavailable: "+format, args...)
}

// RequireRoot gates tests that need root.
func RequireRoot(t testing.TB) {
	t.Helper()
	RequireIsolation(t, os.Geteuid() == 0, "needs root (euid %d)", os.Geteuid())
}

// UniqueName returns a parent-group name unique to this test run, so that a
// leak check sees only what this test made.
func UniqueName(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	n := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	if len(n) > 40 {
		n = n[:40]
	}
	return "cstest-" + n + "-" + hex.EncodeToString(b[:])
}
