package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

func newStatusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status JOB",
		Short: "Show a job, its attempts and its result",
		Long: `Show a job: its state, its attempts with their timing, CPU time and peak
memory, and once accepted its output, reductions and the certificate's
path.`,
		GroupID: groupJobs,
		Args:    exactArgs(1, "status needs exactly one JOB id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dm, err := a.dialReader()
			if err != nil {
				return a.report("status", nil, err, nil)
			}
			st, err := dm.Status(cmd.Context(), args[0])
			if err != nil {
				return a.report("status", nil, dm.err(err), nil)
			}
			st = withCertificatePath(st, dm.home)
			return a.report("status", st, nil, func() { printStatus(a.stdout, st) })
		},
	}
}

// extraAttempts says which of a job's allowed attempts its retry policy
// did not count: interrupted by a shutdown, granted by the operator.
func extraAttempts(j *apitypes.Job) string {
	var parts []string
	if j.InterruptedAttempts > 0 {
		parts = append(parts, fmt.Sprintf("%d interrupted by a shutdown", j.InterruptedAttempts))
	}
	if j.GrantedAttempts > 0 {
		parts = append(parts, fmt.Sprintf("%d granted by the operator", j.GrantedAttempts))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d by its retry policy; %s)", j.Retry.MaxAttempts, strings.Join(parts, ", "))
}

// prefixed is p+s, or "" when s is.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// printStatus is the human form of a job's status.
// The certificate's place is the job's (withCertificatePath).
func printStatus(w io.Writer, st *apitypes.JobStatus) {
	j := &st.Job
	fmt.Fprintf(w, "job %s: %s\n", j.JobID, j.State)
	fmt.Fprintf(w, "  operation  %s, priority %d, %d of at most %d attempt(s)%s\n", j.Operation, j.Priority, j.Attempts, j.AttemptsAllowed, extraAttempts(j))
	if r := j.Resolved; r != nil {
		fmt.Fprintf(w, "  resolved   attempt %d with a %s by the operator at %s%s\n", r.Attempt, r.As, r.Time.Format(time.RFC3339), prefixed(": ", r.Reason))
	}
	fmt.Fprintf(w, "  submitted  %s\n", j.Created.Format(time.RFC3339))
	if j.Error != nil {
		fmt.Fprintf(w, "  error      %s\n", j.Error.Error())
	}
	if len(j.Result) > 0 {
		if res, err := protocol.ParseResult(j.Result); err == nil {
			vals := make([]string, len(res.Output))
			for i, v := range res.Output {
				vals[i] = fmt.Sprint(v)
			}
			fmt.Fprintf(w, "  output     %s\n", strings.Join(vals, " "))
			fmt.Fprintf(w, "  reductions %d of a budget of %d (%s)\n", res.Reductions, res.Budget, res.Kind)
			switch {
			case j.CertificatePath != "":
				fmt.Fprintf(w, "  certificate %s\n", j.CertificatePath)
			case j.CertificateHost != "":
				fmt.Fprintf(w, "  certificate %s\n", certificateElsewhere(j))
			}
		}
	}
	for _, at := range st.Attempts {
		line := fmt.Sprintf("  attempt %d: %s", at.N, at.State)
		var parts []string
		switch {
		case at.State == lifecycle.Unknown && !at.Started.IsZero():
			// Its end is when recovery found it, which counts the time the
			// supervisor was down: how long it ran is not known.
			parts = append(parts, fmt.Sprintf("started %s, found at recovery %s; how long it ran is not known",
				at.Started.Format(time.RFC3339), at.Ended.Format(time.RFC3339)))
		case !at.Started.IsZero() && !at.Ended.IsZero():
			parts = append(parts, "ran "+at.Ended.Sub(at.Started).Round(time.Millisecond).String())
		}
		if t := at.Telemetry; t.CPUTimeMS > 0 || t.PeakMemoryBytes > 0 {
			parts = append(parts, fmt.Sprintf("cpu %s", time.Duration(t.CPUTimeMS)*time.Millisecond))
			if t.PeakMemoryBytes > 0 {
				parts = append(parts, "peak memory "+protocol.FormatBytes(t.PeakMemoryBytes))
			}
		}
		if at.Telemetry.Killed != "" {
			parts = append(parts, "killed: "+at.Telemetry.Killed)
		}
		if at.Error != nil {
			if why := afterState(string(at.State), at.Error.Error()); why != "" {
				parts = append(parts, why)
			}
		}
		if at.Host != "" {
			parts = append(parts, fmt.Sprintf("on host %s, generation %d", at.Host, at.Generation))
		}
		if len(parts) > 0 {
			line += " (" + strings.Join(parts, ", ") + ")"
		}
		fmt.Fprintln(w, line)
	}
}
