package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// The product binaries link etcd's client only, never its server (which
// the tests embed), and the worker links neither, nor gRPC.
func TestProductBinariesLinkNoEtcdServer(t *testing.T) {
	skipShort(t)
	deps := func(bin string) string {
		out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
		}
		return string(out)
	}
	sup := deps(supervisorBin)
	if !strings.Contains(sup, "go.etcd.io/etcd/client/v3") || strings.Contains(sup, "go.etcd.io/etcd/server/v3") || strings.Contains(sup, "go.etcd.io/raft") {
		t.Errorf("cyber-supervisor's modules:\n%s", sup)
	}
	w := deps(workerBin)
	for _, m := range []string{"go.etcd.io/etcd", "google.golang.org/grpc", "google.golang.org/protobuf", "hashicorp/go-plugin"} {
		if strings.Contains(w, m) {
			t.Errorf("nox-worker links %s:\n%s", m, w)
		}
	}
	if g := deps(filepath.Join(binDir, "sandbox-gate")); strings.Contains(g, "go.etcd.io/etcd") {
		t.Errorf("sandbox-gate links etcd:\n%s", g)
	}
}

// `hosts` lists the daemon's host (its own store: the one host), with
// its boot and slots; status names the host of each attempt.
func TestHostsCommand(t *testing.T) {
	requireIsolation(t)
	home := newHome(t)
	d := startDaemon(t, home, 2, "--host-id", "prover-1")
	defer d.stop(t)
	env := cliJSON(t, 0, "--home", home, "hosts")
	var hosts []struct {
		Host    string   `json:"host"`
		Boot    string   `json:"boot"`
		Slots   string   `json:"slots"`
		Running []string `json:"running"`
		Self    bool     `json:"self"`
	}
	if err := json.Unmarshal(env.Result, &hosts); err != nil {
		t.Fatalf("hosts: %v\n%s", err, env.Result)
	}
	if len(hosts) != 1 || hosts[0].Host != "prover-1" || hosts[0].Boot == "" || hosts[0].Slots != "2" || !hosts[0].Self {
		t.Fatalf("hosts: %+v", hosts)
	}
	ctx := context.Background()
	if _, err := d.client.Submit(ctx, jobSpec(t, "h1", protocol.OpExecute, "[5 [[0 2] [0 6]]]", []uint64{1, 2}, protocol.Limits{}), 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.client.WaitEnd(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	env = cliJSON(t, 0, "--home", home, "status", "h1")
	if !strings.Contains(string(env.Result), `"host":"prover-1"`) {
		t.Fatalf("status names no host: %s", env.Result)
	}
}
