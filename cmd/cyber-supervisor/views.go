package main

import (
	"os"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// The CLI prints the API's own types (supervisor/api/apitypes) for jobs,
// attempts, events and reports: the daemon's replies as they come, and
// the records of a supervisor opened on the home converted the same way
// (api's ...Of functions). The envelope then makes every integer a
// decimal string, which these types already are.

// listedJob is a job as list shows it: a list has no attempts to tell
// which host holds an accepted certificate, so its path is given when
// this home holds the file (in a cluster, another host's may).
func listedJob(j apitypes.Job, home string) apitypes.Job {
	if j.AcceptedAttempt != 0 && j.CertificatePath == "" {
		if p := certificatePath(j.Result, home); p != "" {
			if _, err := os.Stat(p); err == nil {
				j.CertificatePath = p
			}
		}
	}
	return j
}

// withCertificatePath is a job's status as status prints it: where its
// accepted certificate lies is the daemon's word (the status's job), and
// when a daemon did not say, this home's path of it.
func withCertificatePath(st *apitypes.JobStatus, home string) *apitypes.JobStatus {
	j := &st.Job
	if j.AcceptedAttempt != 0 && j.CertificatePath == "" && j.CertificateHost == "" {
		j.CertificatePath = certificatePath(j.Result, home)
	}
	return st
}
