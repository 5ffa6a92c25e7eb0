package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// GET /v1/changes: a cursor of now, then the jobs changed after it, each
// once; a long poll that a submission ends; a cursor of another boot or
// of nothing is a reset, never an error; the query is read strictly.
func TestJobChanges(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	now, err := ts.client.Changes(ctx, "", false)
	if err != nil || now.Cursor == "" || len(now.Jobs) != 0 || now.Reset {
		t.Fatalf("the cursor of now: %+v %v", now, err)
	}
	// A long poll from now: the next submission ends it.
	polled := make(chan []string, 1)
	go func() {
		ch, err := ts.client.Changes(ctx, now.Cursor, true)
		if err != nil {
			t.Error(err)
		}
		polled <- ch.Jobs
	}()
	for _, id := range []string{"c1", "c2"} {
		if _, err := ts.client.Submit(ctx, spec(t, id, 1, 2), 0, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.client.WaitEnd(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-polled; len(got) == 0 || got[0] != "c1" {
		t.Fatalf("the long poll answered %v, want c1 first", got)
	}
	all, err := ts.client.Changes(ctx, now.Cursor, false)
	if err != nil || !slices.Equal(all.Jobs, []string{"c1", "c2"}) || all.Reset {
		t.Fatalf("changes after the first cursor: %+v %v", all, err)
	}
	none, err := ts.client.Changes(ctx, all.Cursor, false)
	if err != nil || len(none.Jobs) != 0 || none.Cursor != all.Cursor {
		t.Fatalf("changes after the last cursor: %+v %v", none, err)
	}
	for _, c := range []string{"another-boot.1", "nonsense", ts.sup.Boot() + ".999999", ts.sup.Boot() + ".01"} {
		r, err := ts.client.Changes(ctx, c, false)
		if err != nil || !r.Reset || len(r.Jobs) != 0 || r.Cursor != all.Cursor {
			t.Errorf("cursor %q: %+v %v, want a reset to %s", c, r, err, all.Cursor)
		}
	}
	for _, c := range []struct{ target, want string }{
		{"/v1/changes?wait=2", "wait"},
		{"/v1/changes?after=a&after=b", "given 2 times"},
		{"/v1/changes?since=1", "unknown query parameter"},
		{"/v1/changes?after=%01", "after"},
		{"/v1/changes?after=" + strings.Repeat("a", 200), "after"},
	} {
		resp, rb := ts.request(t, "GET", c.target, nil)
		if e := apiError(t, rb); resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error(), c.want) {
			t.Errorf("GET %s: %d %s, want 400 with %q", c.target, resp.StatusCode, rb, c.want)
		}
	}
	if resp, _ := ts.request(t, "POST", "/v1/changes", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/changes: %d", resp.StatusCode)
	}
}
