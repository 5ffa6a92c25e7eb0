package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// op is one operation of the history: what a client did through a
// socket (submit, read), what a daemon committed (claim: an attempt
// prepared; accept), or a fault of the nemesis. Times are the machine's
// wall clock in nanoseconds, comparable across its processes.
type op struct {
	Kind       string `json:"kind"`
	Job        string `json:"job"`
	N          uint32 `json:"attempt,omitempty"`
	Host       string `json:"host,omitempty"`
	Boot       string `json:"boot,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	Call       int64  `json:"call_ns"`
	Return     int64  `json:"return_ns"` // math.MaxInt64: not known
	OK         bool   `json:"ok"`
	Err        string `json:"err,omitempty"`
	// What a read saw.
	Attempts uint32 `json:"attempts,omitempty"`
	Accepted uint32 `json:"accepted,omitempty"`
	State    string `json:"state,omitempty"`
	// Logged: a daemon's own record; otherwise a claim or acceptance the
	// final store shows but no log holds (its daemon died after the
	// commit), placed from the record's own time to the end.
	Logged bool `json:"logged,omitempty"`
}

type history struct {
	start time.Time
	mu    sync.Mutex
	list  []op
}

func (h *history) add(o op) {
	h.mu.Lock()
	h.list = append(h.list, o)
	h.mu.Unlock()
}

func (h *history) ops() []op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.list...)
}

func (h *history) write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, o := range h.ops() {
		if err := enc.Encode(o); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func (h *history) summary() string {
	count := map[string]int{}
	for _, o := range h.ops() {
		k := o.Kind
		if !o.OK {
			k += " (refused)"
		}
		count[k]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d; ", k, count[k])
	}
	return b.String()
}

// check runs every check of the history against the final statuses.
func (c *faultRun) check(final map[string]*apitypes.JobStatus) {
	t := c.t
	ops := c.h.ops()
	claims := map[string]op{} // job/n → the daemon's record
	accepts := map[string][]op{}
	for _, o := range ops {
		key := fmt.Sprintf("%s/%d", o.Job, o.N)
		switch o.Kind {
		case "claim":
			// No attempt is prepared by two hosts (or twice by one).
			if prev, ok := claims[key]; ok {
				t.Errorf("attempt %s prepared twice: by %s (generation %d) and %s (generation %d)", key, prev.Host, prev.Generation, o.Host, o.Generation)
			}
			claims[key] = o
		case "accept":
			accepts[o.Job] = append(accepts[o.Job], o)
		}
	}
	byHost := map[string]*clusterDaemon{}
	for _, d := range c.ds {
		byHost[d.host] = d
	}
	outcome := map[lifecycle.State]int{}
	for id, st := range final {
		outcome[st.Job.State]++
		for _, a := range st.Attempts {
			outcome["attempt "+a.State]++
		}
		if !st.Job.State.Terminal() {
			t.Errorf("job %s is %s, neither ended nor unknown", id, st.Job.State)
		}
		// At most one accepted attempt, and one committed acceptance.
		acc := 0
		for _, a := range st.Attempts {
			key := fmt.Sprintf("%s/%d", id, a.N)
			if a.State == lifecycle.Accepted {
				acc++
			}
			if cl, ok := claims[key]; ok && (cl.Host != a.Host || cl.Generation != a.Generation) {
				t.Errorf("attempt %s is of host %s generation %d, its claim was logged by %s generation %d", key, a.Host, a.Generation, cl.Host, cl.Generation)
			}
		}
		if acc > 1 || len(accepts[id]) > 1 {
			t.Errorf("job %s accepted twice: %d accepted attempts, %d acceptances committed", id, acc, len(accepts[id]))
		}
		if len(accepts[id]) == 1 && (st.Job.State != lifecycle.Accepted || st.Job.AcceptedAttempt != accepts[id][0].N) {
			t.Errorf("job %s: an acceptance of attempt %d committed, the store says %s (accepted %d)", id, accepts[id][0].N, st.Job.State, st.Job.AcceptedAttempt)
		}
		if st.Job.State == lifecycle.Accepted {
			c.checkResult(id, st, byHost)
		}
	}
	t.Logf("outcomes: %v", outcome)
	c.checkLinearizable(final, claims, accepts)
}

// checkResult: the accepted result is the job's, and an accepted
// certificate verifies (read from the home of the host that ran it).
func (c *faultRun) checkResult(id string, st *apitypes.JobStatus, byHost map[string]*clusterDaemon) {
	t := c.t
	c.mu.Lock()
	j := c.specs[id]
	c.mu.Unlock()
	res, err := protocol.ParseResult(st.Job.Result)
	if err != nil || len(res.Output) != 1 || res.Output[0] != j.want {
		t.Errorf("job %s: result %s (%v), want output %d", id, st.Job.Result, err, j.want)
		return
	}
	if j.op != protocol.OpProve {
		return
	}
	var acc *struct{ host string }
	for _, a := range st.Attempts {
		if a.N == st.Job.AcceptedAttempt {
			acc = &struct{ host string }{a.Host}
		}
	}
	d := byHost[acc.host]
	if d == nil || res.Artifact == nil {
		t.Errorf("job %s: certificate of host %q, artifact %+v", id, acc.host, res.Artifact)
		return
	}
	path := filepath.Join(supervisor.SandboxDir(d.home), id, strconv.FormatUint(uint64(st.Job.AcceptedAttempt), 10), res.Artifact.Name)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("job %s: accepted certificate: %v", id, err)
		return
	}
	enc, err := artifacts.Decompress(raw, int64(cert.MaxEncodedBytes))
	if err != nil {
		t.Errorf("job %s: certificate %s: %v", id, path, err)
		return
	}
	var js protocol.JobSpec
	if err := json.Unmarshal(j.spec, &js); err != nil {
		t.Fatal(err)
	}
	b, err := protocol.ParseBundle(js.Program.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	stmt, _, err := cert.Verify(context.Background(), enc, cert.Expect{Program: b.Tokens, Inputs: j.inputs, Output: []uint64{j.want}, Budget: js.Limits.Reductions}, cert.Bounds{})
	if err != nil || len(stmt.Outputs) != 1 || stmt.Outputs[0] != j.want {
		t.Errorf("job %s: the accepted certificate does not verify: %v", id, err)
	}
}

// claimInput and readOutput are the claim register's operations: each
// job has one, holding how many attempts were prepared and which is
// accepted.
type claimInput struct {
	kind string // claim, accept, read
	n    uint32
}

type register struct{ prepared, accepted uint32 }

// claimModel: an attempt is claimed next in line (n = prepared+1) and
// only before the job is accepted; the latest attempt is accepted, once;
// a read sees the register as it is.
var claimModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, o := range history {
			job := o.Metadata.(string)
			if _, ok := by[job]; !ok {
				keys = append(keys, job)
			}
			by[job] = append(by[job], o)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, len(keys))
		for i, k := range keys {
			out[i] = by[k]
		}
		return out
	},
	Init: func() any { return register{} },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(register), input.(claimInput)
		switch in.kind {
		case "claim":
			if s.accepted != 0 || in.n != s.prepared+1 {
				return false, s
			}
			return true, register{prepared: in.n}
		case "accept":
			if s.accepted != 0 || in.n != s.prepared {
				return false, s
			}
			return true, register{prepared: s.prepared, accepted: in.n}
		default:
			return output.(register) == s, s
		}
	},
	DescribeOperation: func(input, output any) string {
		in := input.(claimInput)
		if in.kind == "read" {
			o := output.(register)
			return fmt.Sprintf("read → %d prepared, %d accepted", o.prepared, o.accepted)
		}
		return fmt.Sprintf("%s %d", in.kind, in.n)
	},
}

// checkLinearizable checks the claims, acceptances and reads of every job
// against the claim register. A claim or acceptance the final store holds
// but no daemon logged (kill -9 between the commit and the log line)
// gets the interval from its record's own time (taken inside its
// transaction) to the end of the history.
func (c *faultRun) checkLinearizable(final map[string]*apitypes.JobStatus, claims map[string]op, accepts map[string][]op) {
	var hist []porcupine.Operation
	add := func(job string, in claimInput, out any, call, ret int64) {
		hist = append(hist, porcupine.Operation{Input: in, Output: out, Call: call, Return: ret, Metadata: job})
	}
	end := int64(math.MaxInt64 / 2)
	unlogged := 0
	for id, st := range final {
		for _, a := range st.Attempts {
			key := fmt.Sprintf("%s/%d", id, a.N)
			if cl, ok := claims[key]; ok {
				add(id, claimInput{"claim", a.N}, nil, cl.Call, cl.Return)
			} else {
				unlogged++
				add(id, claimInput{"claim", a.N}, nil, a.Created.UnixNano(), end)
			}
		}
		if st.Job.AcceptedAttempt != 0 {
			if ac := accepts[id]; len(ac) == 1 {
				add(id, claimInput{"accept", st.Job.AcceptedAttempt}, nil, ac[0].Call, ac[0].Return)
			} else {
				unlogged++
				var ended int64
				for _, a := range st.Attempts {
					if a.N == st.Job.AcceptedAttempt {
						ended = a.Ended.UnixNano()
					}
				}
				add(id, claimInput{"accept", st.Job.AcceptedAttempt}, nil, ended, end)
			}
		}
	}
	for _, o := range c.h.ops() {
		if o.Kind == "read" && final[o.Job] != nil {
			add(o.Job, claimInput{kind: "read"}, register{prepared: o.Attempts, accepted: o.Accepted}, o.Call, o.Return)
		}
	}
	res, info := porcupine.CheckOperationsVerbose(claimModel, hist, 2*time.Minute)
	c.t.Logf("linearizability: %s over %d operations (%d claims or acceptances placed from the store)", res, len(hist), unlogged)
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("cluster-faults-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(claimModel, info, path); err == nil {
			c.t.Logf("visualization: %s", path)
		}
		c.t.Errorf("the history of claims and acceptances is not linearizable (%s)", res)
	}
}
