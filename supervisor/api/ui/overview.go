package ui

import (
	"html/template"
	"net/http"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// overviewView is the overview page: jobs by state, the queue, slots,
// latencies, throughput and failures over the last hour and day, and
// the daemon with what its host enforces.
type overviewView struct {
	O *apitypes.Overview
	// OldestAge is how long the oldest queued job has waited ("": none).
	OldestAge string
	Slots     usage
	Hour, Day chartPair
	// Failures are each code's totals over the last day (codes, most
	// first) with its legend class.
	Failures []codeTotal
	Uptime   string
}

type chartPair struct {
	Accepted, Failed template.HTML
	AcceptedSum      uint64
	FailedSum        uint64
}

type codeTotal struct {
	Code  protocol.Code
	Class string
	Hour  uint64
	Day   uint64
}

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	if r.URL.RawQuery != "" {
		h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "the overview takes no query"))
		return
	}
	o, err := h.src.Overview(r.Context())
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	now := h.opts.Now()
	v := overviewView{O: o, Slots: usageOf(o.SlotsInUse, o.Slots, itoa)}
	if !o.OldestQueued.IsZero() {
		v.OldestAge = human(now.Sub(o.OldestQueued).Truncate(time.Second))
	}
	if !o.Started.IsZero() {
		v.Uptime = human(now.Sub(o.Started).Truncate(time.Second))
	}
	v.Hour = pairOf("last hour, per minute", o.LastHour)
	v.Day = pairOf("last day, per hour", o.LastDay)
	hour := map[protocol.Code]uint64{}
	for _, c := range o.LastHour.Failures {
		hour[c.Code] = c.Total
	}
	for _, c := range o.LastDay.Failures {
		v.Failures = append(v.Failures, codeTotal{Code: c.Code, Class: codeClass(c.Code), Hour: hour[c.Code], Day: c.Total})
	}
	h.render(w, r, http.StatusOK, "overview", "Overview", v)
}

func pairOf(window string, s apitypes.Series) chartPair {
	acc, fail := seriesLayers(s)
	p := chartPair{Accepted: barChart("accepted jobs, "+window, s, acc), Failed: barChart("failed jobs by error code, "+window, s, fail)}
	for _, c := range s.Accepted {
		p.AcceptedSum += c
	}
	for _, c := range s.Failures {
		p.FailedSum += c.Total
	}
	return p
}
