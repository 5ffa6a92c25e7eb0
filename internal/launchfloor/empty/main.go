// Command empty does nothing: what starting and ending any Go binary
// costs, for BenchmarkOneShotFloor.
package main

func main() {}
