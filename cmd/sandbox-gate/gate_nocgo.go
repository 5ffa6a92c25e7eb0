//go:build !(cgo && linux && (amd64 || arm64 || riscv64 || ppc64le || loong64))

package main

// cInit says that this binary carries the C init; without cgo it has
// none, and a launch through it fails (its status never comes).
const cInit = false
