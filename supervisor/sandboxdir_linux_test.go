package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// A jailed worker works in its own tmpfs: its attempt's sandbox on the
// host is made only for a certificate. While the result is being
// accepted, an execute attempt has none, and a prove attempt's holds the
// certificate the supervisor collected from the worker's stream (issue
// 30: it goes to disk as it is written, not into the worker's memory);
// once accepted, the certificate is kept and the execute job left
// nothing.
func TestJailedAttemptMakesItsSandboxOnlyToKeep(t *testing.T) {
	requireIsolation(t)
	home := t.TempDir()
	s := open(t, home, launch.IsolationRequired, nil)
	defer s.close(t)
	present := map[string]bool{}
	collected := map[string]os.FileInfo{}
	s.hooks.afterProduced = func(job string, n uint32) {
		fi, err := os.Lstat(filepath.Join(SandboxDir(home), job, strconv.FormatUint(uint64(n), 10), protocol.StreamedArtifactName))
		present[job], collected[job] = err == nil, fi
	}
	for _, op := range []protocol.Operation{protocol.OpExecute, protocol.OpProve} {
		id := s.submit(t, spec(t, "keep-"+string(op), op, add2, []uint64{3, 5}, protocol.Limits{}, nil))
		st := s.wait(t, id)
		if st.Job.State != lifecycle.Accepted {
			t.Fatalf("%s: %s %+v", op, st.Job.State, st.Job.Error)
		}
		if seen, ok := present[id]; !ok || seen != (op == protocol.OpProve) {
			t.Errorf("%s: certificate in the sandbox while the result was accepted: %v (hook ran: %v)", op, seen, ok)
		}
		kept := filepath.Join(SandboxDir(home), id, strconv.FormatUint(uint64(st.Job.Accepted), 10))
		ents, err := os.ReadDir(kept)
		switch op {
		case protocol.OpProve:
			if err != nil || len(ents) != 1 {
				t.Errorf("prove: kept sandbox %s holds %v (%v), want the certificate", kept, ents, err)
			}
			// The file the supervisor collected is kept as it is, not
			// copied again (keeping.ours).
			if fi, err := os.Lstat(filepath.Join(kept, protocol.StreamedArtifactName)); err != nil || collected[id] == nil || !os.SameFile(fi, collected[id]) {
				t.Errorf("prove: the kept certificate is not the file collected from the stream (%v)", err)
			}
		default:
			if _, err := os.Lstat(filepath.Join(SandboxDir(home), id)); !os.IsNotExist(err) {
				t.Errorf("execute: a sandbox exists for a job that keeps nothing (%v)", err)
			}
		}
	}
}
