package pluginclient

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
)

// envServeHelper makes the test binary, re-executed by go-plugin's client,
// serve a fake worker (the helper-process pattern).
const envServeHelper = "PLUGINCLIENT_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(envServeHelper) == "1" {
		svc := &fakeService{run: func(_ context.Context, req protocol.RunRequest) (protocol.Result, error) {
			r := testResult()
			r.Attempt = req.Attempt
			return r, nil
		}}
		if err := pluginserver.Serve(svc, pluginserver.Config{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helperClient(t *testing.T, versions ...int) *plugin.Client {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envServeHelper+"=1")
	hs := Handshake
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  hs,
		Plugins:          PluginMap(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
		StartTimeout:     20 * time.Second,
		GRPCDialOptions:  DialOptions,
	}
	if len(versions) > 0 {
		cfg.Plugins = nil
		cfg.VersionedPlugins = map[int]plugin.PluginSet{}
		for _, v := range versions {
			cfg.VersionedPlugins[v] = PluginMap()
		}
	}
	c := plugin.NewClient(cfg)
	t.Cleanup(c.Kill)
	return c
}

// The whole go-plugin path across processes: go-plugin's client starts
// the plugin, reads pluginserver's handshake line, connects, and a run and
// a Shutdown go through; the plugin process then exits by itself.
func TestServeHandshakeAndShutdown(t *testing.T) {
	client := helperClient(t)
	rpc, err := client.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := rpc.Ping(); err != nil {
		t.Fatalf("health check: %v", err)
	}
	if v := client.NegotiatedVersion(); v != protocol.PluginProtocolVersion {
		t.Fatalf("negotiated version %d", v)
	}
	w, err := Dispense(rpc)
	if err != nil {
		t.Fatal(err)
	}
	req := testRequest(t)
	req.Attempt = 3
	run, err := w.Start(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(ctxT(t))
	if err != nil || res.Attempt != 3 {
		t.Fatalf("run: %+v %v", res, err)
	}
	if err := w.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !client.Exited() {
		if time.Now().After(deadline) {
			t.Fatal("the plugin process did not exit after Shutdown")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A client that only speaks another version of the worker protocol is
// told so by go-plugin's client, from the version pluginserver announces.
func TestServeVersionMismatch(t *testing.T) {
	client := helperClient(t, protocol.PluginProtocolVersion+1)
	if _, err := client.Client(); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("a client of another protocol version connected: %v", err)
	}
}

func TestServeRefusals(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	var stdout, stderr bytes.Buffer
	cfg := pluginserver.Config{Stdout: &stdout, Stderr: &stderr}

	cfg.Getenv = env(nil)
	if err := pluginserver.Serve(&fakeService{}, cfg); !errors.Is(err, pluginserver.ErrNotLaunchedAsPlugin) {
		t.Fatalf("no cookie: %v", err)
	}
	if !strings.Contains(stderr.String(), "This binary is a plugin") {
		t.Fatalf("no cookie: stderr %q", stderr.String())
	}
	cfg.Getenv = env(map[string]string{protocol.PluginCookieKey: "wrong"})
	if err := pluginserver.Serve(&fakeService{}, cfg); !errors.Is(err, pluginserver.ErrNotLaunchedAsPlugin) {
		t.Fatalf("wrong cookie: %v", err)
	}
	for _, k := range []string{"PLUGIN_CLIENT_CERT", "PLUGIN_MULTIPLEX_GRPC"} {
		cfg.Getenv = env(map[string]string{protocol.PluginCookieKey: protocol.PluginCookieValue, k: "true"})
		if err := pluginserver.Serve(&fakeService{}, cfg); !errors.Is(err, pluginserver.ErrUnsupported) {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if stdout.Len() != 0 {
		t.Fatalf("a refused start wrote a handshake: %q", stdout.String())
	}
}
