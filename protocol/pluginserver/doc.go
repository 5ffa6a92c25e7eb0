// Package pluginserver is the worker's side of the go-plugin protocol,
// written against the standard library alone: the handshake line, the unix
// socket, and gRPC over cleartext HTTP/2 (net/http) with the few messages
// this contract has encoded by hand.
//
// Why not go-plugin's own plugin.Serve: a worker process is started for
// every attempt, and linking go-plugin, grpc-go and protobuf made each
// start cost more than the job (package initialisation alone, mostly
// protobuf descriptors, was a third of a trivial job's worker CPU). The
// supervisor still drives workers with go-plugin's client and grpc-go; this
// package speaks exactly what that client uses (go-plugin documents the
// protocol for plugins written without it):
//
//   - the handshake: magic cookie check, protocol version negotiation,
//     a listening unix socket in PLUGIN_UNIX_SOCKET_DIR, and the line
//     "1|<version>|unix|<path>|grpc|" on stdout;
//   - grpc.health.v1.Health/Check, answering SERVING for "plugin";
//   - plugin.GRPCController/Shutdown;
//   - cyber.worker.v1.Worker (Describe, Run, Shutdown; see
//     protocol/workerpb/worker.proto, the wire format's definition).
//
// go-plugin's stdio and broker streams answer Unimplemented, which its
// client treats as a plugin without those features. TLS (AutoMTLS) and
// gRPC multiplexing are refused at the handshake rather than half done.
package pluginserver
