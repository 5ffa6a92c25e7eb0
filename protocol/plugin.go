package protocol

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// Handshake is shared by the supervisor and worker binaries. The cookie is
// not security; it keeps a worker binary from being started by hand or by a
// host that speaks another protocol. Change ProtocolVersion on any
// incompatible change to the service.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "CYBER_WORKER_PLUGIN",
	MagicCookieValue: "34a3ad5a04c4309a77ef16fe717901b9",
}

// PluginName is the single plugin a worker serves.
const PluginName = "worker"

// DefaultShutdownGrace is how long a Shutdown waits for open streams (go-
// plugin's own stdio and broker streams never end on their own) before it
// stops the server hard.
const DefaultShutdownGrace = 250 * time.Millisecond

// maxWireBytes bounds one gRPC message: a maximal job spec plus framing.
const maxWireBytes = MaxJobSpecBytes + 1<<20

// PluginMap is the plugin set for both sides: pass the Service in a worker,
// nil in the supervisor.
func PluginMap(svc Service) map[string]plugin.Plugin {
	return map[string]plugin.Plugin{PluginName: &Plugin{Impl: svc}}
}

// ServeConfig is the go-plugin configuration of a worker binary:
// plugin.Serve(protocol.ServeConfig(svc)).
func ServeConfig(svc Service) *plugin.ServeConfig {
	return &plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         PluginMap(svc),
		GRPCServer:      NewGRPCServer,
	}
}

// NewGRPCServer is go-plugin's default server with a receive limit large
// enough for a maximal job spec (gRPC's default is 4 MiB).
func NewGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(maxWireBytes))...)
}

// Plugin is the go-plugin glue: a gRPC-only plugin.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is served on the worker side; the supervisor leaves it nil.
	Impl Service
	// ShutdownGrace overrides DefaultShutdownGrace.
	ShutdownGrace time.Duration
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer registers the worker service.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("protocol: Plugin.Impl is nil on the serving side")
	}
	grace := p.ShutdownGrace
	if grace <= 0 {
		grace = DefaultShutdownGrace
	}
	workerpb.RegisterWorkerServer(s, newServer(p.Impl, s, grace))
	return nil
}

// GRPCClient returns a *Client.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (interface{}, error) {
	return NewClient(cc), nil
}

// Dispense fetches the worker client from a started go-plugin client.
func Dispense(c plugin.ClientProtocol) (*Client, error) {
	raw, err := c.Dispense(PluginName)
	if err != nil {
		return nil, Errorf(CodeIOError, "dispensing the worker plugin: %v", err)
	}
	w, ok := raw.(*Client)
	if !ok {
		return nil, Errorf(CodeInternalError, "the worker plugin is not a protocol client")
	}
	return w, nil
}
