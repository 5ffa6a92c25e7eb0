package api

import (
	"context"
	"strconv"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// The dashboard's reads of the overview and the job list: the routes'
// own calls, and a page's query read by the route's own parser
// (jobQueryOf), so that the page takes what GET /v1/jobs takes.

func (u uiSource) Overview(ctx context.Context) (*apitypes.Overview, error) {
	o, err := u.s.sup.Overview(ctx)
	if err != nil {
		return nil, answerOf(err)
	}
	v := OverviewOf(o, u.s.sup.Capabilities(), u.s.sup.Host())
	return &v, nil
}

func (u uiSource) ListJobs(ctx context.Context, q apitypes.JobQuery) (*apitypes.JobPage, error) {
	params := map[string]string{"state": string(q.State), "op": q.Operation, "code": string(q.Code), "program": q.Program, "cursor": q.Cursor}
	if !q.Since.IsZero() {
		params["since"] = q.Since.UTC().Format(time.RFC3339Nano)
	}
	if !q.Until.IsZero() {
		params["until"] = q.Until.UTC().Format(time.RFC3339Nano)
	}
	if q.Limit != 0 {
		params["limit"] = strconv.Itoa(q.Limit)
	}
	jq, err := jobQueryOf(params)
	if err != nil {
		return nil, err
	}
	page, err := u.s.sup.ListJobs(ctx, jq)
	if err != nil {
		return nil, answerOf(err)
	}
	v := JobPageOf(page)
	return &v, nil
}

func (u uiSource) FindJob(ctx context.Context, prefix string) (string, error) {
	id, err := u.s.sup.FindJob(ctx, prefix)
	if err != nil {
		return "", answerOf(err)
	}
	return id, nil
}
