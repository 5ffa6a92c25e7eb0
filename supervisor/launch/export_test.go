package launch

import "testing"

// For the conformance run (package launch_test).

// WorkerBinForTests is the nox-worker this test binary built.
func WorkerBinForTests() string { return workerBin }

// LeftoversForTests names what of l's workers is left on the host.
func LeftoversForTests(l *ProcessLauncher) []string { return leftovers(l.CgroupName()) }

// RemoveParentGroupsForTests removes l's (empty) parent groups.
func RemoveParentGroupsForTests(l *ProcessLauncher) { removeParentGroups(l.CgroupName()) }

// RequireIsolationForTests is requireIsolation.
func RequireIsolationForTests(t testing.TB) { requireIsolation(t) }
