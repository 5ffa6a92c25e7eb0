package pluginclient

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Handshake is protocol's handshake as go-plugin's client wants it.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  protocol.PluginProtocolVersion,
	MagicCookieKey:   protocol.PluginCookieKey,
	MagicCookieValue: protocol.PluginCookieValue,
}

// PluginMap is the plugin set of a go-plugin client of workers.
func PluginMap() map[string]plugin.Plugin {
	return map[string]plugin.Plugin{protocol.PluginName: &Plugin{}}
}

// Plugin is the go-plugin glue on the supervisor's side: it only dispenses
// clients. Workers serve with package pluginserver.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)

// GRPCServer refuses: this process is the client.
func (p *Plugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error {
	return errors.New("pluginclient: workers serve with package pluginserver")
}

// GRPCClient returns a *Client.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (interface{}, error) {
	return NewClient(cc), nil
}

// Dispense fetches the worker client from a started go-plugin client.
func Dispense(c plugin.ClientProtocol) (*Client, error) {
	raw, err := c.Dispense(protocol.PluginName)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeIOError, "dispensing the worker plugin: %v", err)
	}
	w, ok := raw.(*Client)
	if !ok {
		return nil, protocol.Errorf(protocol.CodeInternalError, "the worker plugin is not a protocol client")
	}
	return w, nil
}

// DialOptions tune the gRPC connection to one worker for what it carries:
// a few small messages, and at most one job spec of up to 49 MiB out.
// Fixed 1 MiB receive windows turn off grpc-go's bandwidth estimation,
// whose pings cost both processes a round trip per burst of data; 16 KiB
// buffers instead of 32 KiB each way; no service config or retries, which
// go-plugin's connection never uses. And the connection carries only the
// methods the protocol uses, each with a receive limit (bounds.go): the
// broker and stdio streams go-plugin's client opens by itself are refused
// before they are opened.
var DialOptions = append([]grpc.DialOption{
	grpc.WithInitialWindowSize(1 << 20),
	grpc.WithInitialConnWindowSize(1 << 20),
	grpc.WithReadBufferSize(16 << 10),
	grpc.WithWriteBufferSize(16 << 10),
	grpc.WithDisableServiceConfig(),
	grpc.WithDisableRetry(),
}, boundOptions...)
