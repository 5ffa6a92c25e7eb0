package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// Overview is GET /v1/overview.
func (c *Client) Overview(ctx context.Context) (*apitypes.Overview, error) {
	var o apitypes.Overview
	err := c.do(ctx, http.MethodGet, "/v1/overview", nil, &o)
	return &o, err
}

// ListJobs is one page of GET /v1/jobs in its paged form.
func (c *Client) ListJobs(ctx context.Context, q apitypes.JobQuery) (*apitypes.JobPage, error) {
	var p apitypes.JobPage
	err := c.do(ctx, http.MethodGet, "/v1/jobs?"+JobQueryValues(q).Encode(), nil, &p)
	return &p, err
}

// FindJob is GET /v1/lookup/{prefix}: the id of the one job whose id
// starts with prefix.
func (c *Client) FindJob(ctx context.Context, prefix string) (string, error) {
	var l apitypes.JobLookup
	err := c.do(ctx, http.MethodGet, "/v1/lookup/"+url.PathEscape(prefix), nil, &l)
	return l.JobID, err
}

// JobQueryValues is q as GET /v1/jobs's parameters (the paged form: its
// cursor is always given, empty for the first page).
func JobQueryValues(q apitypes.JobQuery) url.Values {
	v := url.Values{"cursor": {q.Cursor}}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("state", string(q.State))
	set("op", q.Operation)
	set("code", string(q.Code))
	set("program", q.Program)
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}
