//go:build !purego

package field

import "golang.org/x/sys/cpu"

// haveBMI reports whether gcdStepsBMI can run (TZCNT needs BMI1, SHRX and
// SHLX need BMI2). Tests switch it off to run the Go loop on the same
// inputs.
var haveBMI = cpu.X86.HasBMI1 && cpu.X86.HasBMI2

//go:noescape
func gcdStepsBMI(a uint64) (c, k uint64)

func gcdStepsFast(a uint64) (c, k uint64) { return gcdStepsBMI(a) }
