//go:build !linux

package worker

// hostMemory is not measured off Linux.
func hostMemory() uint64 { return fallbackMemory }
