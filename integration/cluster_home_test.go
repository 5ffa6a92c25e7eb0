package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// Issue #27, item 2. A home whose own store holds an accepted prove job,
// started on etcd (the obvious way to join a cluster): the start used to
// sweep the job's certificate away (the etcd store does not know the
// job), and back on its own store the home said accepted and named a
// file that no longer existed. Now the start is refused, exit 2, naming
// --keep-local-jobs; with it the daemon serves and deletes nothing of
// the home's own jobs; back on its own store the job is accepted with
// its certificate in place; and a certificate goes only with the gc of
// the store that holds its job, whichever store the home serves on.
func TestServeOnEtcdKeepsTheHomesOwnJobs(t *testing.T) {
	requireIsolation(t)
	srv := etcdtest.Start(t, etcdtest.Options{})
	home := newHome(t)
	onEtcd := []string{"--store", "etcd://" + srv.Endpoint + "/home", "--host-id", "home-1"}
	ctx := context.Background()
	prove := func(d *daemon, id string) string {
		t.Helper()
		if _, err := d.client.Submit(ctx, jobSpec(t, id, protocol.OpProve, "[5 [[0 2] [0 6]]]", []uint64{3, 5}, protocol.Limits{}), 0, nil); err != nil {
			t.Fatalf("submit %s: %v", id, err)
		}
		st, err := d.client.WaitEnd(ctx, id)
		if err != nil || st.Job.State != lifecycle.Accepted {
			t.Fatalf("job %s: %+v %v\n%s", id, st, err, d.log)
		}
		res, err := protocol.ParseResult(st.Job.Result)
		if err != nil || res.Artifact == nil {
			t.Fatalf("job %s: result %v", id, err)
		}
		p := filepath.Join(home, "sandboxes", id, "1", res.Artifact.Name)
		mustExist(t, p)
		return p
	}

	d := startDaemon(t, home, 1, "--pool", "0")
	localCert := prove(d, "local-1")
	d.stop(t)

	// Refused: the command line is to change (exit 2), and nothing of
	// the home's own store was touched.
	code, out := serveUntilExit(t, home, append([]string{"--worker", workerBin, "--format", "json"}, onEtcd...))
	if _, err := os.Stat(localCert); err != nil {
		t.Errorf("the start on etcd deleted the home's accepted certificate: %v\n%s", err, out)
	}
	if code != 2 || !strings.Contains(out, `"code":"usage"`) || !strings.Contains(out, "--keep-local-jobs") ||
		!strings.Contains(out, "local-1") || !strings.Contains(out, "holds 1 job") {
		t.Fatalf("serve on etcd from a home whose own store holds a job: exit %d\n%s", code, out)
	}

	// With --keep-local-jobs it serves, and deletes nothing of them.
	d = startDaemonWith(t, home, 1, append([]string{"--log-level", "info", "--pool", "0", "--keep-local-jobs"}, onEtcd...)...)
	mustExist(t, localCert)
	if log := d.log.String(); !strings.Contains(log, "sandboxes_of_unknown_jobs_kept=1") || !strings.Contains(log, "sandboxes_removed=0") {
		t.Errorf("the start's log does not say it kept the sandbox of a job its store does not know:\n%s", log)
	}
	r := cli(t, "--home", home, "--format", "json", "status", "local-1")
	if r.code != 2 || !strings.Contains(r.stdout, `"code":"unknown_job"`) {
		t.Fatalf("the etcd store knows the home's own job: %+v", r)
	}
	clusterCert := prove(d, "cluster-1")
	d.stop(t)

	// Back on the home's own store: accepted, its certificate where the
	// status says; the etcd job's certificate is kept too (this store
	// does not know it).
	d = startDaemon(t, home, 1, "--pool", "0")
	// The etcd job's sandbox is no sign of a restore of the home's own
	// store (it was, and the start fenced the store and marked the job
	// forgotten by a restore).
	if strings.Contains(d.log.String(), "older than its home") {
		t.Errorf("back on its own store, the home was taken for a restored one:\n%s", d.log)
	}
	if r := cli(t, "--home", home, "--format", "json", "status", "cluster-1"); r.code != 2 || !strings.Contains(r.stdout, `"code":"unknown_job"`) {
		t.Errorf("the home's own store on the etcd job: %+v", r)
	}
	env := cliJSON(t, 0, "--home", home, "status", "local-1")
	var st struct {
		Job struct {
			State string `json:"state"`
			Path  string `json:"certificate_path"`
		} `json:"job"`
	}
	if err := json.Unmarshal(env.Result, &st); err != nil || st.Job.State != "accepted" || st.Job.Path != localCert {
		t.Fatalf("status on the home's own store: %s (%v)", env.Result, err)
	}
	mustExist(t, localCert)
	mustExist(t, clusterCert)
	// This store's gc removes its job's certificate, not the other's.
	cliJSON(t, 0, "--home", home, "gc")
	mustNotExist(t, localCert)
	mustExist(t, clusterCert)
	d.stop(t)

	// On etcd again (the home's own store holds a tombstone, no job: no
	// flag needed): the start keeps the cluster's job's certificate, and
	// the cluster's gc removes it.
	d = startDaemon(t, home, 1, append([]string{"--pool", "0"}, onEtcd...)...)
	mustExist(t, clusterCert)
	env = cliJSON(t, 0, "--home", home, "gc")
	if !strings.Contains(string(env.Result), `"cluster-1"`) {
		t.Fatalf("gc on etcd: %s", env.Result)
	}
	mustNotExist(t, clusterCert)
	d.stop(t)
}

// serveUntilExit starts serve on home with args and waits for it to exit:
// its exit status and output. A serve that comes up instead is stopped,
// and its status is -1.
func serveUntilExit(t *testing.T, home string, args []string) (int, string) {
	t.Helper()
	d := spawnDaemon(t, supervisorBin, home, nil, args...)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-d.done:
			var ee interface{ ExitCode() int }
			if err == nil {
				return 0, d.log.String()
			}
			if errors.As(err, &ee) {
				return ee.ExitCode(), d.log.String()
			}
			t.Fatalf("serve on %s: %v\n%s", home, err, d.log)
		default:
		}
		if _, err := d.client.List(context.Background(), ""); err == nil {
			d.stop(t)
			return -1, "serve came up\n" + d.log.String()
		}
	}
	d.kill9()
	t.Fatalf("serve on %s neither came up nor stopped\n%s", home, d.log)
	return 0, ""
}

func mustExist(t testing.TB, p string) {
	t.Helper()
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}

func mustNotExist(t testing.TB, p string) {
	t.Helper()
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is still there (%v)", p, err)
	}
}
