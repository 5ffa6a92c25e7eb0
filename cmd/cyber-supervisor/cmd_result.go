package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

func newResultCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "result JOB",
		Short: "Print a job's accepted result",
		Long: `Print a job's accepted result: the output values on stdout, a summary on
stderr (with --format json the contract result, with "certificate_path",
the certificate's absolute path, for a prove job). A job that ended without
one prints its error; a job that has not ended yet is not_finished
(exit 4).`,
		GroupID: groupJobs,
		Args:    exactArgs(1, "result needs exactly one JOB id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dm, err := a.dialReader()
			if err != nil {
				return a.report("result", nil, err, nil)
			}
			raw, err := dm.Result(cmd.Context(), args[0])
			if ended := (*api.EndedError)(nil); errors.As(err, &ended) {
				// The job's own end, not this command's: a job cancelled
				// earlier is exit 1 (130 says this command was interrupted).
				return a.report("result", nil, &jobOutcome{err: ended.Err}, nil)
			}
			if err != nil {
				return a.report("result", nil, dm.err(err), nil)
			}
			var job *apitypes.Job
			if hasCertificate(raw) {
				// Which host holds it: in a cluster, not necessarily the
				// daemon asked (its status says).
				st, err := dm.Status(cmd.Context(), args[0])
				if err != nil {
					return a.report("result", nil, dm.err(err), nil)
				}
				job = &st.Job
			}
			return a.reportResult("result", raw, job, dm.home)
		},
	}
}

// finalReport prints a finished job: its accepted result or its error.
// signalled: this command cancelled the job on a signal (run), so a
// cancelled job is its exit 130; otherwise the job's end is its own
// outcome (jobOutcome: cancelled by another command is exit 1).
func (a *app) finalReport(command string, st *apitypes.JobStatus, home string, signalled bool) error {
	j := &st.Job
	if j.State == lifecycle.Accepted {
		return a.reportResult(command, j.Result, j, home)
	}
	e := j.Error
	if e == nil {
		e = protocol.Errorf(protocol.CodeInternalError, "the job ended %s without an error", j.State)
	}
	if e.Code == protocol.CodeClaimMismatch {
		// An --expect mismatch: show what the program produced.
		if out := producedOutput(st); out != "" {
			e = &protocol.Error{Code: e.Code, Message: e.Message + "; the program produced " + out, Retryable: e.Retryable}
		}
	}
	if signalled {
		return a.report(command, nil, e, nil)
	}
	return a.report(command, nil, &jobOutcome{err: e}, nil)
}

// producedOutput is the output the last attempt's worker reported, as
// V1,V2 (empty if there is none).
func producedOutput(st *apitypes.JobStatus) string {
	for i := len(st.Attempts) - 1; i >= 0; i-- {
		if p := st.Attempts[i].Produced; len(p) > 0 {
			res, err := protocol.ParseResult(p)
			if err != nil {
				return ""
			}
			vals := make([]string, len(res.Output))
			for k, v := range res.Output {
				vals[k] = strconv.FormatUint(v, 10)
			}
			return "[" + strings.Join(vals, ",") + "]"
		}
	}
	return ""
}

// reportResult prints an accepted result (contract JSON): in json format
// (apitypes.Result) with where its certificate lies added, as job (the
// daemon's status) says, or when it says nothing (nil, or no place:
// a daemon that does not say), this home's path of it:
// "certificate_path", its absolute path, when this home holds it;
// "certificate_host" and, when that host is registered,
// "certificate_location" (MACHINE:PATH) when another host of the cluster
// does.
func (a *app) reportResult(command string, raw []byte, job *apitypes.Job, home string) error {
	res, err := protocol.ParseResult(raw)
	if err != nil {
		return a.report(command, nil, protocol.Errorf(protocol.CodeInternalError, "the stored result does not parse: %v", err), nil)
	}
	out := apitypes.Result{Contract: raw}
	where := ""
	switch {
	case job != nil && job.CertificatePath != "":
		out.CertificatePath = job.CertificatePath
	case job != nil && job.CertificateHost != "":
		out.CertificateHost, out.CertificateLocation = job.CertificateHost, job.CertificateLocation
		where = certificateElsewhere(job)
	default:
		out.CertificatePath = certificatePath(raw, home)
	}
	if where == "" {
		where = out.CertificatePath
	}
	return a.report(command, out, nil, func() {
		for _, v := range res.Output {
			fmt.Fprintln(a.stdout, v)
		}
		switch res.Kind {
		case protocol.KindExecution:
			fmt.Fprintf(a.stderr, "Executed in %d reductions (a local computation, not a certificate)\n", res.Reductions)
		case protocol.KindExecutionCertificate:
			fmt.Fprintf(a.stderr, "Proved in %d reductions and verified by the supervisor (%s); certificate %s\n", res.Reductions, res.Profile, where)
		case protocol.KindVerification:
			fmt.Fprintf(a.stderr, "Certificate verified by the supervisor: %d reductions (%s)\n", res.Reductions, res.Profile)
		}
	})
}

// hasCertificate: the result names a certificate (a prove job's).
func hasCertificate(raw []byte) bool {
	res, err := protocol.ParseResult(raw)
	return err == nil && res.Artifact != nil
}

// certificateElsewhere names a certificate another host of the cluster
// holds: the host, and where in its home.
func certificateElsewhere(j *apitypes.Job) string {
	if j.CertificateLocation != "" {
		return fmt.Sprintf("on host %s: %s (not in this home)", j.CertificateHost, j.CertificateLocation)
	}
	return fmt.Sprintf("on host %s, in its home's %s (not in this home; %s is not registered now)", j.CertificateHost, j.CertificateInHome, j.CertificateHost)
}

// certificatePath is where an accepted certificate lies when this home
// holds it: the attempt's sandbox under the home (absolute), or "" for
// results without one.
func certificatePath(raw []byte, home string) string {
	res, err := protocol.ParseResult(raw)
	if err != nil || res.Artifact == nil || home == "" {
		return ""
	}
	return filepath.Join(supervisor.SandboxDir(home), res.JobID, strconv.FormatUint(uint64(res.Attempt), 10), res.Artifact.Name)
}
