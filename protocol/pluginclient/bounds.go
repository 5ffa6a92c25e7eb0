package pluginclient

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// The connection to a worker carries the worker protocol's calls and two
// of go-plugin's, and nothing else; every message it receives is bounded.
//
// go-plugin's client opens two more streams on every connection by
// itself, its broker's and its stdio's, with a receive limit of 2 GiB a
// message (grpc.MaxCallRecvMsgSize(math.MaxInt32), set before
// ClientConfig.GRPCDialOptions). The worker protocol uses neither
// (pluginserver answers both Unimplemented), and a worker that answered
// them had the supervisor take whatever it sent: one 1 GiB StdioData
// message grew a daemon from 21 MB to 3.1 GB, 10^6 ConnInfo messages on
// the broker stream to 1.4 GB (go-plugin's broker starts a goroutine and
// a 5 s timer for each). The interceptors below refuse every other
// method on the supervisor's side, before a stream is opened, so a
// worker is never asked for anything it could answer with them:
// go-plugin takes the Unimplemented status as a plugin without stdio
// (its stdio loop then returns at once) and its broker's stream ends
// before it began. Each allowed method gets its own receive limit,
// appended after every other call option so that it is the one that
// holds.

// Receive limits, from what each reply may hold (protocol/limits.go) and
// 1 KiB for the protobuf framing around it.
const (
	framingBytes = 1 << 10
	// describeReplyBytes: capabilities, descriptor, or an error.
	describeReplyBytes = protocol.MaxCapabilitiesBytes + protocol.MaxDescriptorBytes + protocol.MaxErrorBytes + framingBytes
	// runEventBytes: the largest event is a result (or a failure).
	runEventBytes = protocol.MaxResultBytes + protocol.MaxErrorBytes + framingBytes
	// smallReplyBytes: a Shutdown's error, go-plugin's Empty, a health
	// status.
	smallReplyBytes = protocol.MaxErrorBytes + framingBytes
	// maxHeaderListBytes bounds a response's decoded headers or
	// trailers: a status, a content type, a status message (grpc-go's
	// default is 16 MiB).
	maxHeaderListBytes = 16 << 10
)

// carried are the methods a worker's connection carries, with the
// largest message each may receive.
var carried = map[string]int{
	workerpb.Worker_Describe_FullMethodName: describeReplyBytes,
	workerpb.Worker_Run_FullMethodName:      runEventBytes,
	workerpb.Worker_Shutdown_FullMethodName: smallReplyBytes,
	// go-plugin's Kill sends it (through its GRPCClient.Close).
	"/plugin.GRPCController/Shutdown": smallReplyBytes,
	// go-plugin's Ping.
	healthpb.Health_Check_FullMethodName: smallReplyBytes,
}

// boundOptions are the dial options that close the connection to what
// it carries.
var boundOptions = []grpc.DialOption{
	// Whatever else: go-plugin's default, replaced (a later default call
	// option wins); the interceptors then refuse the call anyway.
	grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(smallReplyBytes)),
	grpc.WithMaxHeaderListSize(maxHeaderListBytes),
	grpc.WithChainUnaryInterceptor(boundUnary),
	grpc.WithChainStreamInterceptor(boundStream),
}

func boundUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	limit, ok := carried[method]
	if !ok {
		return notCarried(method)
	}
	return invoke(ctx, method, req, reply, cc, withLimit(opts, limit)...)
}

func boundStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, open grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	limit, ok := carried[method]
	if !ok {
		return nil, notCarried(method)
	}
	return open(ctx, desc, cc, method, withLimit(opts, limit)...)
}

// withLimit appends the receive limit to a copy of opts.
func withLimit(opts []grpc.CallOption, limit int) []grpc.CallOption {
	out := make([]grpc.CallOption, len(opts), len(opts)+1)
	copy(out, opts)
	return append(out, grpc.MaxCallRecvMsgSize(limit))
}

// notCarried is the refusal of a method the connection does not carry:
// Unimplemented, which go-plugin's stdio client takes for a plugin
// without stdio.
func notCarried(method string) error {
	return status.Errorf(codes.Unimplemented, "pluginclient: a worker's connection does not carry %s", method)
}
