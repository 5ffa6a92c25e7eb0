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
