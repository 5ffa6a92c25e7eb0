//go:build !amd64 || purego

package field

// haveBMI is false: no assembly loop on this platform (or with purego).
var haveBMI = false

func gcdStepsFast(a uint64) (c, k uint64) { return gcdSteps(a) }
