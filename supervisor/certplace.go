package supervisor

import (
	"context"
	"path/filepath"
	"strconv"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// CertificatePlace is where a job's accepted certificate lies: in the
// sandbox of the accepted attempt, on the host that ran it. On the
// home's own store that is this home; in a cluster it is the home of
// the accepted attempt's host, which need not be the daemon asked: a
// path under the asked daemon's home would name a file that does not
// exist there.
type CertificatePlace struct {
	// Host is the host that holds it (the accepted attempt's).
	Host string `json:"host"`
	// Here: this daemon's home holds it, at Path.
	Here bool   `json:"here"`
	Path string `json:"path,omitempty"`
	// InHome is its path below its host's home:
	// sandboxes/<job>/<attempt>/<name>.
	InHome string `json:"in_home"`
	// Location, for a certificate another host holds, is
	// MACHINE:PATH of it on that host, when the host is registered now
	// (its registration names its home); "" when it is not.
	Location string `json:"location,omitempty"`
}

// certificatePlace says where st's accepted certificate lies, or nil when
// the job has none (not accepted, or no certificate kept: execute and
// verify jobs).
func (s *Supervisor) certificatePlace(ctx context.Context, st *JobStatus) *CertificatePlace {
	j := st.Job
	if j.State != lifecycle.Accepted || j.Accepted == 0 || len(j.Result) == 0 {
		return nil
	}
	res, err := protocol.ParseResult(j.Result)
	if err != nil || res.Artifact == nil {
		return nil
	}
	n := strconv.FormatUint(uint64(j.Accepted), 10)
	inHome := filepath.Join(SandboxDir(""), j.ID, n, res.Artifact.Name)
	self := s.ident().host
	host := self
	for _, a := range st.Attempts {
		if a.N == j.Accepted && a.Host != "" {
			host = a.Host
		}
	}
	p := &CertificatePlace{Host: host, InHome: inHome}
	if s.cluster == nil || host == self {
		// The home's own store's attempts all ran in this home, whatever
		// host id they were recorded under.
		home, err := filepath.Abs(s.cfg.Home)
		if err != nil {
			home = s.cfg.Home
		}
		p.Here, p.Path = true, filepath.Join(home, inHome)
		return p
	}
	if hosts, err := s.cluster.Hosts(ctx); err == nil {
		for _, h := range hosts {
			if h.Host == host && h.Home != "" {
				p.Location = h.Home + "/" + inHome
			}
		}
	}
	return p
}
