// Package race tells tests whether the race detector is on, and widens
// their wall-clock bounds when it is: the CI run is `go test -race` on two
// shared cores, where the detector slows the test process 2-10 times and
// its neighbours load the machine, so a bound that holds in a plain run
// would fail there now and then. A bound is never tighter than 5 times
// its target under -race; speed targets themselves are met in benchmarks.
package race

import "time"

// Slack is how much wider a wall-clock bound is under the race detector.
const Slack = 5

// Bound is d in a plain run and Slack times d under the race detector.
func Bound(d time.Duration) time.Duration {
	if Enabled {
		return Slack * d
	}
	return d
}
