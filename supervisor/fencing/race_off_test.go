//go:build !race

package fencing

const raceEnabled = false
