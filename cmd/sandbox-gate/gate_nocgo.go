//go:build !(cgo && linux && (amd64 || arm64 || riscv64 || ppc64le || loong64))

package main

// cInit says that this binary carries the C init; without cgo the Go init
// of package sandbox/gate plays it.
const cInit = false
