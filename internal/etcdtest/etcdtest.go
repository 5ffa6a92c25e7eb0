// Package etcdtest runs a real etcd for tests: an embedded server
// (go.etcd.io/etcd/server/v3/embed) in the test binary, or the same
// server as a process of its own (etcd-test-server, built by Build) for
// the tests that kill and restart it. Only test binaries import it: the
// product binaries link etcd's client, never its server
// (TestProductBinariesLinkNoEtcdServer).
//
// Starting etcd never skips a test: the server is built from the
// module's own dependencies, so a failure to start is a failure, with or
// without REQUIRE_ETCD=1 (which CI sets, and which this package checks
// for nothing else).
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// Server is an embedded etcd.
type Server struct {
	e        *embed.Etcd
	Endpoint string // host:port of its client URL
}

// Options of a server.
type Options struct {
	// Fsync: sync writes to disk as etcd does by default. Unit tests
	// leave it off (their etcd is gone with the test); the fault test's
	// process server keeps it on.
	Fsync bool
	// TLS serves clients over TLS only: the server's certificate and key
	// files and, when CA is set, client certificates required and checked
	// against it.
	TLS *TLSFiles
}

// TLSFiles are PEM files of a TLS server.
type TLSFiles struct{ Cert, Key, CA string }

// FreePort returns a loopback port nothing listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Config is the embedded server's configuration: one member, data in
// dir, client URLs listening on listen and advertised as advertise, the
// peer URL on peer.
func Config(dir, listen, advertise, peer string, fsync bool) (*embed.Config, error) {
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = dir
	lu, err := url.Parse("http://" + listen)
	if err != nil {
		return nil, err
	}
	au, err := url.Parse("http://" + advertise)
	if err != nil {
		return nil, err
	}
	pu, err := url.Parse("http://" + peer)
	if err != nil {
		return nil, err
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*lu}, []url.URL{*au}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"stderr"}
	cfg.UnsafeNoFsync = !fsync
	return cfg, nil
}

// SkipShort skips a test that needs etcd in the developer's tier (go
// test -short); the full tier (scripts/test.sh, CI) runs it.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: starts a real etcd")
	}
}

// Start runs an embedded etcd for the test and stops it at cleanup.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	SkipShort(t)
	dir := filepath.Join(t.TempDir(), "etcd")
	client := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	peer := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	cfg, err := Config(dir, client, client, peer, o.Fsync)
	if err != nil {
		t.Fatal(err)
	}
	if o.TLS != nil {
		u := url.URL{Scheme: "https", Host: client}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{u}, []url.URL{u}
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: o.TLS.Cert, KeyFile: o.TLS.Key, TrustedCAFile: o.TLS.CA, ClientCertAuth: o.TLS.CA != ""}
	}
	if os.Getenv("ETCDTEST_LOG") == "" {
		cfg.LogOutputs = []string{"/dev/null"}
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		t.Fatalf("etcd failed to start: %v", err)
	case <-time.After(60 * time.Second):
		e.Close()
		t.Fatal("etcd did not become ready within 60 s")
	}
	s := &Server{e: e, Endpoint: client}
	t.Cleanup(s.Stop)
	return s
}

// Stop stops the server (again: nothing).
func (s *Server) Stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}
