package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// TestUpgradeAndChildRoutes: POST /v1/progs/{id}/upgrade is a CAS on the
// prog's revision (201 made, 200 the same again), GET .../revisions
// lists them, an invocation of the replaced revision ends a conflict,
// and POST /v1/invocations starts children on a parent's steps; every
// refusal with its contract code and status, every body read strictly.
func TestUpgradeAndChildRoutes(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	if _, err := ts.client.InitNeuron(ctx, "testnet"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.client.SetGrant(ctx, GrantBody{Revision: 0, Acts: []string{"emit", "host"}}); err != nil {
		t.Fatal(err)
	}
	bundle := func(src string) string {
		b, err := protocol.WrapNox("p", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	emit2 := bundle(fmt.Sprintf("[3 [[16 [[1 %d] [1 0]]] [16 [[1 %d] [1 0]]]]]", hostact.TagEmit, hostact.TagEmit))
	emit9 := bundle(fmt.Sprintf("[3 [[16 [[1 %d] [1 0]]] [1 9]]]", hostact.TagEmit))
	rep, err := ts.client.InstallProg(ctx, ProgBody{Bundle: []byte(emit2), Acts: []string{"emit"}})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Prog.ID
	root, err := ts.client.Placement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.client.Release(ctx, root.Generation); err != nil {
		t.Fatal(err)
	}
	old, err := ts.client.Invoke(ctx, p, []uint64{5})
	if err != nil {
		t.Fatal(err)
	}
	hex := strings.Repeat("ab", 32)
	up := func(rev, rest string) string { return `{"revision":"` + rev + `","bundle":` + emit9 + rest + `}` }
	cases := []struct {
		method, target string
		body           string
		status         int
		want           string
	}{
		{"POST", "/v1/progs/xyz/upgrade", up("0", ""), 400, "prog id"},
		{"POST", "/v1/progs/" + hex + "/upgrade", up("0", ""), 404, "missing"},
		{"POST", "/v1/progs/" + p + "/upgrade", up("3", ""), 409, "stale_state: conflict: upgrade: prog " + p + " is at revision 0, not 3"},
		{"POST", "/v1/progs/" + p + "/upgrade", `{"revision":0,"bundle":` + emit9 + `}`, 400, "request body"},
		{"POST", "/v1/progs/" + p + "/upgrade", up("0", `,"color":1`), 400, "unknown field"},
		{"POST", "/v1/progs/" + p + "/upgrade", up("0", `,"revision":"0"`), 400, "given twice"},
		{"POST", "/v1/progs/" + p + "/upgrade", up("0", `,"acts":["nope"]`), 400, "no such act"},
		{"POST", "/v1/progs/" + p + "/upgrade", up("0", `,"acts":["0xac75000000000099"]`), 422, "unsupported_profile"},
		{"POST", "/v1/progs/" + p + "/upgrade", `{"revision":"0","bundle":{}}`, 400, "invalid_job"},
		{"POST", "/v1/progs/" + p + "/upgrade?x=1", up("0", ""), 400, "unknown query parameter"},
		{"GET", "/v1/progs/" + hex + "/revisions", "", 404, "missing"},
		{"GET", "/v1/progs/" + p + "/revisions?x=1", "", 400, "unknown query parameter"},
		{"GET", "/v1/progs/" + p + "/revisions", "x", 400, "takes no request body"},
		{"POST", "/v1/invocations", `{"prog":"` + p + `","inputs":[],"steps":"5"}`, 400, "delegated by a parent"},
		{"POST", "/v1/invocations", `{"prog":"` + p + `","inputs":[],"parent":"zz"}`, 400, "parent id"},
		{"POST", "/v1/invocations", `{"prog":"` + p + `","inputs":[],"parent":"` + hex + `"}`, 404, "missing"},
		{"POST", "/v1/invocations", `{"prog":"` + p + `","inputs":[],"parent":"` + old.ID + `","steps":5}`, 400, "request body"},
		{"POST", "/v1/invocations", `{"prog":"` + p + `","inputs":[],"parent":"` + old.ID + `","steps":"2000000"}`, 400, "over prog"},
		{"POST", "/v1/progs/" + p + "/upgrade", up("0", `,"acts":["host"]`), 201, ""},
		{"POST", "/v1/progs/" + p + "/upgrade", up("0", `,"acts":["host"]`), 200, ""},
		{"POST", "/v1/progs/" + p + "/upgrade", up("0", `,"acts":["emit"]`), 409, "is at revision 1, not 0"},
	}
	for _, c := range cases {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		resp, rb := ts.request(t, c.method, c.target, body)
		if c.want == "" {
			if resp.StatusCode != c.status || !strings.Contains(string(rb), `"revision":"1"`) {
				t.Errorf("%s %s: %d %s, want %d with the prog at revision 1", c.method, c.target, resp.StatusCode, rb, c.status)
			}
			continue
		}
		e := apiError(t, rb)
		if resp.StatusCode != c.status || !answerable(e.Code) || !strings.Contains(string(e.Code)+": "+e.Message, c.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.method, c.target, resp.StatusCode, rb, c.status, c.want)
		}
	}
	// The client's upgrade with acts absent keeps the current ones.
	again, err := ts.client.UpgradeProg(ctx, p, UpgradeBody{Revision: 1, Bundle: []byte(emit2)})
	if err != nil || !again.Created || again.Prog.Revision != 2 || len(again.Prog.Acts) != 1 || again.Prog.Acts[0] != hostact.TagHost {
		t.Fatalf("upgrade keeping the acts: %+v %v", again, err)
	}
	revs, err := ts.client.ProgRevisions(ctx, p)
	if err != nil || len(revs) != 3 || revs[0].Revision != 0 || revs[0].Acts[0] != hostact.TagEmit || revs[2].Revision != 2 {
		t.Fatalf("revisions %+v %v", revs, err)
	}
	// The daemon ends the invocation of revision 0 (its proposal dropped).
	waitFor(t, "the stale invocation to end", func() bool {
		v, err := ts.client.Invocation(ctx, old.ID)
		return err == nil && v.Status == string(store.InvocationConflict) && v.Error != nil && v.Error.Code == protocol.CodeStaleState
	})

	// A child on 50 of a live parent's steps.
	if _, err := ts.client.SetGrant(ctx, GrantBody{Revision: 1, Acts: []string{"emit", "host"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.client.UpgradeProg(ctx, p, UpgradeBody{Revision: 2, Bundle: []byte(emit9), Acts: []string{"emit"}}); err != nil {
		t.Fatal(err)
	}
	parent, err := ts.client.Invoke(ctx, p, []uint64{1})
	if err != nil {
		t.Fatal(err)
	}
	// A slice running the parent holds its steps (busy): wait for it to
	// wait on its act.
	waitFor(t, "the parent to wait on its act", func() bool {
		v, err := ts.client.Invocation(ctx, parent.ID)
		return err == nil && v.Status == string(store.InvocationWaiting) && v.Held == 0
	})
	child, err := ts.client.InvokeWith(ctx, InvokeBody{Prog: p, Parent: parent.ID, Steps: 50})
	if err != nil || child.Parent != parent.ID || child.Limit != 50 || child.ProgRevision != 3 {
		t.Fatalf("child %+v %v", child, err)
	}
	pv, err := ts.client.Invocation(ctx, parent.ID)
	if err != nil || pv.Delegated != 50 || len(pv.Children) != 1 || pv.Children[0] != child.ID {
		t.Fatalf("parent %+v %v", pv, err)
	}
}
