package ui

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// jobView is the job page: the job, its spec in summary, its attempts
// with their claims, resources and termination causes, its timeline, the
// verification verdict and, apart from it, the acceptance record.
type jobView struct {
	Job        apitypes.Job
	Spec       *specSummary
	SpecErr    string
	Attempts   []attemptView
	Timeline   []timelineRow
	Acceptance *acceptance
	Commands   []command
}

// specSummary is the immutable spec as the page shows it: who the
// program is, what it is given and what it may spend.
type specSummary struct {
	Operation      string
	Profile        string
	Particle       string
	TokensSHA256   string
	ProgramName    string
	BundleBytes    int
	Inputs         []uint64
	InputsMore     int
	ExpectedOutput int
	Limits         protocol.Limits
	ArtifactBytes  int
}

// attemptView is one attempt with what explains its end.
type attemptView struct {
	apitypes.Attempt
	Claim        *apitypes.Claim
	Memory, Wall usage
	Cause        cause
	Verification *verdict
}

// usage is a measured figure against its limit (Limit 0: none known).
type usage struct {
	Used, Limit uint64
	Text        string // the figures as text
	Width       int    // the bar's filled width of 100
	Over        bool   // at or past the limit
}

// cause is why an attempt ended, with the evidence.
type cause struct {
	Kind     string // oom, deadline, cancel, shutdown, error, ok, running
	Text     string
	Evidence []string
}

// verdict is the supervisor's own verification record of an attempt
// (supervisor/accept.go's verification): what it checked, with which
// verifier ("cert": the certificate; "shape": an execute's result,
// untrusted local computation).
type verdict struct {
	Verifier   string `json:"verifier"`
	Kind       string `json:"kind"`
	Particle   string `json:"program_particle"`
	Artifact   string `json:"artifact_sha256"`
	Program    bool   `json:"program_checked"`
	Inputs     bool   `json:"inputs_checked"`
	Output     bool   `json:"expected_output_checked"`
	Budget     bool   `json:"budget_checked"`
	Reductions string `json:"reductions"`
	Outputs    int    `json:"outputs"`
	// Raw is the record as stored when it does not read as one.
	Raw string `json:"-"`
}

// acceptance is the at-most-once acceptance record: the attempt that
// was accepted and when.
type acceptance struct {
	Attempt  uint32
	Time     time.Time
	Result   string
	Summary  *resultSummary
	CertPath string
	CertHost string
	CertHome string
	CertLoc  string
}

// timelineRow is one event with the time since the one before.
type timelineRow struct {
	apitypes.Event
	Since string
	Class string
}

// command is a CLI command the page offers for an action it does not
// take itself.
type command struct {
	What, Line string
}

func (h *handler) job(w http.ResponseWriter, r *http.Request, id string) {
	if r.URL.RawQuery != "" {
		h.fail(w, r, http.StatusBadRequest, protocol.Errorf(protocol.CodeInvalidJob, "the job page takes no query"))
		return
	}
	if !protocol.ValidName(id) {
		h.fail(w, r, http.StatusNotFound, protocol.Errorf(protocol.CodeInvalidJob, "job id %s: want 1-%d of [A-Za-z0-9._-], not starting with a dot",
			protocol.QuotePrefix(id), protocol.MaxTextBytes))
		return
	}
	ctx := r.Context()
	st, err := h.src.Status(ctx, id)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	ev, err := h.src.Events(ctx, id)
	if err != nil {
		h.fail(w, r, 0, err)
		return
	}
	v := jobView{Job: st.Job}
	if raw, err := h.src.Spec(ctx, id); err != nil {
		v.SpecErr = protocol.AsError(err).Message
	} else if s, err := summarise(raw); err != nil {
		v.SpecErr = err.Error()
	} else {
		v.Spec = s
	}
	v.Attempts = attemptsOf(st, v.Spec)
	v.Timeline = timelineOf(ev)
	v.Acceptance = acceptanceOf(st, ev)
	v.Commands = jobCommands(h.cli, st)
	h.render(w, r, http.StatusOK, "job", "Job "+id, v)
}

// summarise reads the frozen spec: it was admitted, so it parses.
func summarise(raw []byte) (*specSummary, error) {
	js, err := protocol.ParseJobSpec(raw)
	if err != nil {
		return nil, err
	}
	s := &specSummary{Operation: string(js.Operation), Profile: js.Profile, BundleBytes: len(js.Program.Bundle),
		ExpectedOutput: len(js.ExpectedOutput), Limits: js.Limits, ArtifactBytes: len(js.Artifact)}
	if ref := js.ArtifactRef; ref != nil {
		// By reference: the certificate's size, not the spec's.
		s.ArtifactBytes = int(min(ref.Size, math.MaxInt))
	}
	if p, err := protocol.ParseBundle(js.Program.Bundle); err == nil {
		id := p.Identity()
		s.Particle, s.TokensSHA256, s.ProgramName = hex.EncodeToString(id.Particle[:]), hex.EncodeToString(id.TokensSHA256[:]), p.Name
	} else if d := js.Program.Identity; d != nil {
		s.Particle = hex.EncodeToString(d.Particle[:])
	}
	const shown = 16
	s.Inputs = js.Inputs
	if len(s.Inputs) > shown {
		s.Inputs, s.InputsMore = s.Inputs[:shown], len(js.Inputs)-shown
	}
	return s, nil
}

func attemptsOf(st *apitypes.JobStatus, spec *specSummary) []attemptView {
	claims := map[uint32]*apitypes.Claim{}
	for i := range st.Claims {
		claims[st.Claims[i].Attempt] = &st.Claims[i]
	}
	var lim protocol.Limits
	if spec != nil {
		lim = spec.Limits
	}
	out := make([]attemptView, 0, len(st.Attempts))
	for _, a := range st.Attempts {
		t := a.Telemetry
		v := attemptView{Attempt: a, Claim: claims[a.N],
			Memory: usageOf(t.PeakMemoryBytes, lim.MemoryBytes, size),
			Wall:   usageOf(t.WallTimeMS, lim.WallTimeMS, func(ms uint64) string { return human(time.Duration(ms) * time.Millisecond) }),
			Cause:  causeOf(a, lim)}
		v.Verification = verdictOf(a.Verification)
		out = append(out, v)
	}
	return out
}

func usageOf(used, limit uint64, format func(uint64) string) usage {
	u := usage{Used: used, Limit: limit, Text: format(used)}
	if limit > 0 {
		u.Text += " of " + format(limit)
		w := used * 100 / limit
		if w > 100 {
			w = 100
		}
		u.Width, u.Over = int(w), used >= limit
	}
	return u
}

// causeOf says why an attempt ended and what shows it: the OOM counter,
// the deadline against the wall time, the kill's reason, the error.
func causeOf(a apitypes.Attempt, lim protocol.Limits) cause {
	t := a.Telemetry
	var c cause
	if a.Error != nil {
		c.Evidence = append(c.Evidence, string(a.Error.Code)+": "+a.Error.Message)
	}
	switch {
	case t.OOMKilled:
		c.Kind, c.Text = "oom", "killed by the kernel's OOM killer at the memory limit"
		c.Evidence = append([]string{"the attempt cgroup's oom_kill counter rose", "peak memory " + size(t.PeakMemoryBytes) + limitText(lim.MemoryBytes, size)}, c.Evidence...)
	case t.Killed == "deadline":
		c.Kind, c.Text = "deadline", "killed at its wall-time limit"
		c.Evidence = append([]string{"wall time " + human(time.Duration(t.WallTimeMS)*time.Millisecond) + limitText(lim.WallTimeMS, func(ms uint64) string { return human(time.Duration(ms) * time.Millisecond) })}, c.Evidence...)
	case t.Killed != "":
		c.Kind, c.Text = t.Killed, "killed by the supervisor: "+t.Killed
	case a.Error != nil:
		c.Kind, c.Text = "error", "ended with "+string(a.Error.Code)
	case !a.Ended.IsZero():
		c.Kind, c.Text = "ok", "ended normally"
	default:
		c.Kind, c.Text = "running", "has not ended"
	}
	return c
}

func limitText(limit uint64, format func(uint64) string) string {
	if limit == 0 {
		return ""
	}
	return " (limit " + format(limit) + ")"
}

// verdictOf reads an attempt's verification record; unreadable, it is
// shown raw.
func verdictOf(raw json.RawMessage) *verdict {
	if len(raw) == 0 {
		return nil
	}
	var v verdict
	if err := json.Unmarshal(raw, &v); err != nil || v.Verifier == "" {
		return &verdict{Raw: string(raw)}
	}
	return &v
}

func timelineOf(ev []apitypes.Event) []timelineRow {
	out := make([]timelineRow, 0, len(ev))
	var prev time.Time
	for i, e := range ev {
		row := timelineRow{Event: e, Class: stateClass(e.To)}
		if i > 0 {
			row.Since = between(prev, e.Time)
		}
		prev = e.Time
		out = append(out, row)
	}
	return out
}

// acceptanceOf is the job's acceptance record, nil before one: the
// accepted attempt, the event that recorded it, the certificate's place.
func acceptanceOf(st *apitypes.JobStatus, ev []apitypes.Event) *acceptance {
	j := st.Job
	if j.State != lifecycle.Accepted || j.AcceptedAttempt == 0 {
		return nil
	}
	a := &acceptance{Attempt: j.AcceptedAttempt, Result: string(j.Result), Summary: summariseResult(j.Result), CertPath: j.CertificatePath,
		CertHost: j.CertificateHost, CertHome: j.CertificateInHome, CertLoc: j.CertificateLocation}
	for _, e := range ev {
		if e.To == lifecycle.Accepted {
			a.Time = e.Time
		}
	}
	return a
}

// jobCommands are the CLI commands that act on or read the job.
func jobCommands(cli func(string) string, st *apitypes.JobStatus) []command {
	id := shellQuote(st.Job.JobID)
	cmds := []command{{"status", cli("status " + id)}, {"events", cli("events " + id)}}
	j := st.Job
	switch {
	case j.State == lifecycle.Unknown && j.Attempts > 0:
		n := itoa(uint64(j.Attempts))
		cmds = append(cmds,
			command{"resolve: run it again", cli("resolve " + id + " --attempt " + n + " --retry --reason 'checked: it did not run'")},
			command{"resolve: end it cancelled", cli("resolve " + id + " --attempt " + n + " --cancel --reason '…'")})
	case !j.State.Terminal():
		cmds = append(cmds, command{"cancel", cli("cancel " + id)})
	}
	if j.State.Terminal() {
		cmds = append(cmds, command{"result", cli("result " + id)})
	}
	return cmds
}

// resultSummary is what an accepted result says, read from its contract
// JSON: its kind, output, cost and artifact.
type resultSummary struct {
	Kind       string   `json:"kind"`
	Output     []string `json:"output"`
	Reductions string   `json:"reductions"`
	Budget     string   `json:"budget"`
	Artifact   *struct {
		Name   string `json:"name"`
		Size   string `json:"size"`
		SHA256 string `json:"sha256"`
	} `json:"artifact"`
}

// summariseResult reads an accepted result; nil when it does not read
// (the page shows it raw).
func summariseResult(raw json.RawMessage) *resultSummary {
	var r resultSummary
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil || r.Kind == "" {
		return nil
	}
	const shown = 16
	if len(r.Output) > shown {
		r.Output = append(r.Output[:shown:shown], fmt.Sprintf("… %d more", len(r.Output)-shown))
	}
	return &r
}
