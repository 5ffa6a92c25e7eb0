package protocol

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
)

// The whole go-plugin path in one process: Serve with ServeConfig, a client
// that reattaches with the shared Handshake, a run, and Shutdown making
// Serve return (in a worker binary, main then returns and the process
// exits cleanly).
func TestServeHandshakeAndShutdown(t *testing.T) {
	svc := &fakeService{run: func(context.Context, RunRequest) (Result, error) { return testResult(), nil }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	cfg := ServeConfig(svc)
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard})
	cfg.Test = &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go plugin.Serve(cfg)

	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not start")
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          PluginMap(nil),
		Reattach:         rc,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard}),
	})
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		t.Fatal(err)
	}
	w, err := Dispense(rpc)
	if err != nil {
		t.Fatal(err)
	}
	run, err := w.Start(ctxT(t), testRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := w.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Shutdown")
	}
}
