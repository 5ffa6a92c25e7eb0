package etcd_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	etcdstore "github.com/cyberia-to/cyber-supervisor/supervisor/store/etcd"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/storetest"
)

func TestParseURL(t *testing.T) {
	good := []struct {
		url       string
		endpoints []string
		prefix    string
	}{
		{"etcd://10.0.0.5:2379", []string{"10.0.0.5:2379"}, etcdstore.DefaultPrefix},
		{"etcd://a:1,b:2,[::1]:3/farm", []string{"a:1", "b:2", "[::1]:3"}, "/farm/"},
		{"etcd://a:1/farm/one/", []string{"a:1"}, "/farm/one/"},
		{"etcd://a:1/", []string{"a:1"}, etcdstore.DefaultPrefix},
	}
	for _, c := range good {
		cfg, err := etcdstore.ParseURL(c.url)
		if err != nil || !reflect.DeepEqual(cfg.Endpoints, c.endpoints) || cfg.Prefix != c.prefix {
			t.Errorf("%s: %v %q %v", c.url, cfg.Endpoints, cfg.Prefix, err)
		}
	}
	for _, bad := range []string{"", "etcd://", "http://a:1", "etcd://a", "etcd://a:1,", "etcd://:1", "etcd://a:", "etcd://a:1/x//y", "etcd://a:1/x\x00"} {
		if _, err := etcdstore.ParseURL(bad); !errors.Is(err, etcdstore.ErrConfig) {
			t.Errorf("%q: %v, want ErrConfig", bad, err)
		}
	}
}

// The store talks TLS to an etcd that requires client certificates: with
// --etcd-ca and --etcd-cert/--etcd-key's files it works; without the
// client certificate, or trusting another CA, it cannot connect.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCA(t, "test CA")
	files := etcdtest.TLSFiles{CA: writePEM(t, dir, "ca.pem", "CERTIFICATE", ca.Raw)}
	files.Cert, files.Key = issue(t, dir, "server", ca, caKey, x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := issue(t, dir, "client", ca, caKey, x509.ExtKeyUsageClientAuth)
	other, _ := newCA(t, "another CA")
	otherCA := writePEM(t, dir, "other.pem", "CERTIFICATE", other.Raw)
	srv := etcdtest.Start(t, etcdtest.Options{TLS: &files})

	open := func(ca, cert, key string) error {
		tlsCfg, err := etcdstore.TLSFiles(ca, cert, key)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{srv.Endpoint}, Prefix: "/tls/", TLS: tlsCfg,
			DialTimeout: 2 * time.Second, RequestTimeout: 2 * time.Second})
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Update(ctx, func(tx store.Tx) error {
			j := storetest.NewJob("over-tls")
			return storetest.Create(tx, j)
		})
	}
	if err := open(files.CA, clientCert, clientKey); err != nil {
		t.Fatalf("TLS with a client certificate: %v", err)
	}
	if err := open(files.CA, "", ""); err == nil {
		t.Error("connected without the client certificate the server requires")
	}
	if err := open(otherCA, clientCert, clientKey); err == nil {
		t.Error("connected to a server whose certificate another CA signed")
	}

	// Bad files are configuration errors, named.
	for _, c := range [][3]string{
		{filepath.Join(dir, "absent.pem"), "", ""},
		{clientKey, "", ""},
		{files.CA, clientCert, ""},
		{files.CA, "", clientKey},
		{files.CA, clientCert, files.Key + ".absent"},
		{files.CA, clientCert, files.Key},
	} {
		if _, err := etcdstore.TLSFiles(c[0], c[1], c[2]); !errors.Is(err, etcdstore.ErrConfig) {
			t.Errorf("TLSFiles%q: %v, want ErrConfig", c, err)
		}
	}
}

var serial int64

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// issue writes a certificate for 127.0.0.1 signed by ca, and its key.
func issue(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", kder)
}

func writePEM(t *testing.T, dir, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
