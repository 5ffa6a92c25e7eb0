package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// Issue #27, item 6 (the cluster's part): answers that lost information
// on a cluster of two daemons (homes a and b) on one etcd.
//
//   - status and result through a of a job accepted on b named a
//     certificate path under a's home, where no such file is: now they
//     name host b and where the file is in b's home;
//   - cancel --reason sent to the host that does not run the job lost
//     the reason: now the job ends cancelled with it;
//   - the recovery event of an attempt whose host died named the
//     recovering host: now it names the host the attempt ran on;
//   - store check and store backup through a daemon on etcd answered
//     internal_error and "no daemon": now they check and copy the home's
//     own store (neuron, grants, progs, acts) and say that the jobs are
//     etcd's to back up.
func TestClusterAnswersAcrossHosts(t *testing.T) {
	requireIsolation(t)
	srv := etcdtest.Start(t, etcdtest.Options{})
	ha, hb := newHome(t), newHome(t)
	serve := func(home, host string) *daemon {
		return startDaemon(t, home, 1, "--pool", "0", "--host-id", host, "--lease-ttl", "1s",
			"--store", "etcd://"+srv.Endpoint+"/answers", "--cgroup-name", cgroupName+"-"+host)
	}
	homes := map[string]string{"a": ha, "b": hb}
	ctx := context.Background()

	// A prove job accepted on b, asked about through a.
	b := serve(hb, "b")
	if _, err := b.client.Submit(ctx, jobSpec(t, "p1", protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{}), 0, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := b.client.WaitEnd(ctx, "p1"); err != nil || st.Job.State != lifecycle.Accepted {
		t.Fatalf("p1: %+v %v", st, err)
	}
	a := serve(ha, "a")
	daemons := map[string]*daemon{"a": a, "b": b}
	env := cliJSON(t, 0, "--home", ha, "status", "p1")
	var st struct {
		Job struct {
			Path     string `json:"certificate_path"`
			Host     string `json:"certificate_host"`
			Location string `json:"certificate_location"`
		} `json:"job"`
	}
	if err := json.Unmarshal(env.Result, &st); err != nil {
		t.Fatal(err)
	}
	if st.Job.Path != "" || st.Job.Host != "b" || !strings.Contains(st.Job.Location, filepath.Join(hb, "sandboxes", "p1", "1")) {
		t.Errorf("status through a of a job accepted on b: %s", env.Result)
	} else if _, err := os.Stat(strings.SplitN(st.Job.Location, ":", 2)[1]); err != nil {
		t.Errorf("the location status names: %v", err)
	}
	r := cli(t, "--home", ha, "status", "p1")
	if r.code != 0 || strings.Contains(r.stdout, ha) || !strings.Contains(r.stdout, "on host b") {
		t.Errorf("status through a (human): %+v", r)
	}
	env = cliJSON(t, 0, "--home", ha, "result", "p1")
	var res map[string]any
	if err := json.Unmarshal(env.Result, &res); err != nil {
		t.Fatal(err)
	}
	if _, ok := res["certificate_path"]; ok || res["certificate_host"] != "b" || !strings.Contains(res["certificate_location"].(string), hb) {
		t.Errorf("result through a of a job accepted on b: %s", env.Result)
	}
	r = cli(t, "--home", ha, "result", "p1")
	if r.code != 0 || strings.Contains(r.stderr, ha) || !strings.Contains(r.stderr, "on host b") {
		t.Errorf("result through a (human): %+v", r)
	}

	// A cancel with a reason, sent to the host that does not run the job.
	runner, other := startLong(t, a, "c1")
	if r := cli(t, "--home", homes[other], "cancel", "c1", "--reason", "operator-moved-it"); r.code != 0 {
		t.Fatalf("cancel through %s: %+v", other, r)
	}
	end, err := daemons[runner].client.WaitEnd(ctx, "c1")
	if err != nil || end.Job.State != lifecycle.Cancelled || end.Job.Error == nil || !strings.Contains(end.Job.Error.Message, "operator-moved-it") {
		t.Errorf("c1 (running on %s, cancelled through %s): %+v %v", runner, other, end.Job, err)
	}

	// An attempt whose host dies: the survivor recovers it, and the
	// event names the host it ran on.
	runner, other = startLong(t, a, "k1")
	daemons[runner].kill9()
	end, err = daemons[other].client.WaitEnd(ctx, "k1")
	if err != nil || end.Job.State != lifecycle.Unknown {
		t.Fatalf("k1 after its host %s died: %+v %v", runner, end, err)
	}
	env = cliJSON(t, 0, "--home", homes[other], "events", "k1")
	var evs []struct {
		Attempt string `json:"attempt"`
		Host    string `json:"host"`
		To      string `json:"to"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(env.Result, &evs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs {
		if e.Attempt == "1" && e.To == "unknown" {
			found = true
			if e.Host != runner || !strings.Contains(e.Reason, "recovered by host "+other) {
				t.Errorf("the recovery event of k1's attempt (it ran on %s, %s recovered it): %+v", runner, other, e)
			}
		}
	}
	if !found {
		t.Errorf("no recovery event for k1: %s", env.Result)
	}
	// The dead daemon's next start removes what its workers left.
	daemons[runner] = serve(homes[runner], runner)

	// store check and backup through a daemon on etcd.
	env = cliJSON(t, 0, "--home", ha, "store", "check")
	var rep struct {
		File string `json:"file"`
		Note string `json:"note"`
	}
	if err := json.Unmarshal(env.Result, &rep); err != nil || rep.File != filepath.Join(ha, "store", "supervisor.db") || !strings.Contains(rep.Note, "etcd") {
		t.Errorf("store check through a daemon on etcd: %s (%v)", env.Result, err)
	}
	copyTo := filepath.Join(t.TempDir(), "a.db")
	env = cliJSON(t, 0, "--home", ha, "store", "backup", copyTo)
	if !strings.Contains(string(env.Result), "etcd") {
		t.Errorf("store backup through a daemon on etcd does not say the jobs are not in it: %s", env.Result)
	}
	mustExist(t, copyTo)
	for _, d := range daemons {
		d.stop(t)
	}
}

// startLong submits a job that runs until it is stopped (one attempt)
// through d and waits for it to run: which host runs it, and the other.
func startLong(t *testing.T, d *daemon, id string) (runner, other string) {
	t.Helper()
	ctx := context.Background()
	spec := jobSpec(t, id, protocol.OpExecute, program(t, "spin.nox"), []uint64{40}, protocol.Limits{WallTimeMS: 120000})
	if _, err := d.client.Submit(ctx, spec, 0, &apitypes.RetryRequest{MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		st, err := d.client.Status(ctx, id)
		if err == nil && st.Job.State == lifecycle.Running && len(st.Attempts) == 1 {
			runner = st.Attempts[0].Host
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not start: %+v %v", id, st, err)
		}
	}
	other = "a"
	if runner == "a" {
		other = "b"
	}
	return runner, other
}
