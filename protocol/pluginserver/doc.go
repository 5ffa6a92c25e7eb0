// Package pluginserver is the worker's side of the go-plugin protocol,
// written without go-plugin, grpc-go, protobuf or net/http: the handshake
// line, the unix socket, a small HTTP/2 server (this package's h2*.go, with
// golang.org/x/net/http2/hpack for header compression) and gRPC framing
// over it, with the few messages this contract has encoded by hand.
//
// Why not go-plugin's own plugin.Serve: a worker process is started for
// every attempt, and linking go-plugin, grpc-go and protobuf made each
// start cost more than the job (package initialisation alone, mostly
// protobuf descriptors, was a third of a trivial job's worker CPU). And
// why not net/http's HTTP/2 server: it writes every header block from a
// new goroutine, starts a handler goroutine even for a call it answers at
// once, and links crypto/tls; a worker process running one job spent a
// quarter more CPU with it (BenchmarkWorkerProcess). The
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
//
// The HTTP/2 server speaks to one kind of client, grpc-go over a private
// socket, and is kept to what that needs: h2c with prior knowledge, no
// server push, no priorities. It keeps both sides' flow control (its own
// receive windows are the largest allowed and topped up at half, since
// every call bounds its messages instead), splits header blocks into
// CONTINUATION frames and DATA into the peer's frame size, and answers a
// call that ends before any message with one HEADERS frame
// (Trailers-Only). Malformed framing ends the connection with a GOAWAY;
// FuzzConn feeds it arbitrary frames.
package pluginserver
