//go:build race

package fencing

// raceEnabled: the race detector slows the pure-Go signatures about
// tenfold, so the property test runs fewer sequences (scripts/fuzz.sh
// runs it long).
const raceEnabled = true
