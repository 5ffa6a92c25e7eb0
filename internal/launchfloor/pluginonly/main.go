// Command pluginonly links HashiCorp go-plugin (and with it gRPC,
// protobuf and net/rpc) and does nothing: what starting and ending a Go
// binary that speaks go-plugin costs, for BenchmarkOneShotFloor.
package main

import _ "github.com/hashicorp/go-plugin"

func main() {}
