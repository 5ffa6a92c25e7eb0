package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// TestCLIPrintsAPITypes: each job command's --format json result is its
// apitypes type (decoded strictly: no key of its own), with the API's
// names: a job's id job_id, a certificate's path certificate_path.
func TestCLIPrintsAPITypes(t *testing.T) {
	home := t.TempDir()
	serveBin(t, home)
	run := func(into any, args ...string) string {
		t.Helper()
		r := cli(t, append([]string{"--home", home, "--format", "json"}, args...)...)
		env := envelope(t, r.stdout)
		if r.code != 0 || !env.OK {
			t.Fatalf("%v: exit %d %s", args, r.code, r.stdout)
		}
		if into != nil {
			dec := json.NewDecoder(bytes.NewReader(env.Result))
			dec.DisallowUnknownFields()
			if err := dec.Decode(into); err != nil {
				t.Errorf("%v: not %T: %v\n%s", args, into, err, env.Result)
			}
		}
		if s := string(env.Result); strings.Contains(s, `"id":`) || strings.Contains(s, `"job":"`) || strings.Contains(s, "artifact_path") {
			t.Errorf("%v: an old name in %s", args, s)
		}
		return string(env.Result)
	}
	run(nil, "submit", example("add.nox"), "--op", "prove", "--input-values", "3,5", "--job-id", "a1", "--wait")
	if res := run(nil, "result", "a1"); !strings.Contains(res, `"certificate_path":"`) {
		t.Errorf("result of a prove job without its certificate_path: %s", res)
	}
	var st apitypes.JobStatus
	run(&st, "status", "a1")
	if st.Job.JobID != "a1" || st.Job.CertificatePath == "" || len(st.Attempts) != 1 || st.Attempts[0].JobID != "a1" {
		t.Errorf("status: %+v", st)
	}
	run(&apitypes.Submitted{}, "submit", example("add.nox"), "--input-values", "1,2", "--job-id", "a2")
	run(&[]apitypes.Job{}, "list")
	run(&[]apitypes.Event{}, "events", "a1")
	run(&apitypes.Cancelled{}, "cancel", "a1")
	run(&[]apitypes.Host{}, "hosts")
	run(&apitypes.CapabilitiesReply{}, "capabilities")
	run(&apitypes.CheckReport{}, "store", "check")
	var gc apitypes.GCReport
	run(&gc, "gc")
	removed := false
	for _, r := range gc.Removed {
		removed = removed || r.JobID == "a1"
	}
	if !removed {
		t.Errorf("gc did not name a1 removed: %+v", gc)
	}
}
