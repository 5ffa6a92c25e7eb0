package supervisor

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// Metrics are counters kept in memory; job states and queue depth are
// read from the store when scraped. Written in the Prometheus text format
// by hand: a dozen series do not need a client library.
type Metrics struct {
	mu        sync.Mutex
	submitted uint64
	ended     map[lifecycle.State]uint64
	kills     uint64
	ooms      uint64
	// store writes that failed on the host's I/O (a full disk), and
	// whether the last write failed so
	storeFailures uint64
	storeFailing  bool
	// the host boot these counters are of, and its cluster history
	host, boot    string
	generation    uint64
	fencings      uint64 // registrations lost
	recoveredHost uint64 // attempts of departed hosts marked unknown here
	// attempt durations, seconds, cumulative histogram buckets
	buckets []float64
	counts  []uint64
	sum     float64
	count   uint64
}

func newMetrics() *Metrics {
	b := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	return &Metrics{ended: map[lifecycle.State]uint64{}, buckets: b, counts: make([]uint64, len(b))}
}

func (m *Metrics) addSubmitted() {
	m.mu.Lock()
	m.submitted++
	m.mu.Unlock()
}

func (m *Metrics) finished(s lifecycle.State) {
	m.mu.Lock()
	m.ended[s]++
	m.mu.Unlock()
}

func (m *Metrics) setHost(host, boot string, gen uint64) {
	m.mu.Lock()
	m.host, m.boot, m.generation = host, boot, gen
	m.mu.Unlock()
}

func (m *Metrics) fenced() {
	m.mu.Lock()
	m.fencings++
	m.mu.Unlock()
}

func (m *Metrics) recoveredFromHost() {
	m.mu.Lock()
	m.recoveredHost++
	m.mu.Unlock()
}

func (m *Metrics) storeWriteFailed() {
	m.mu.Lock()
	m.storeFailures++
	m.storeFailing = true
	m.mu.Unlock()
}

func (m *Metrics) storeWritable() {
	m.mu.Lock()
	m.storeFailing = false
	m.mu.Unlock()
}

func (m *Metrics) attemptDone(d time.Duration, killed, oom bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sec := d.Seconds()
	for i, b := range m.buckets {
		if sec <= b {
			m.counts[i]++
		}
	}
	m.sum += sec
	m.count++
	if killed {
		m.kills++
	}
	if oom {
		m.ooms++
	}
}

// WritePrometheus writes every series. The jobs by state are the
// overview's kept counts (docs/dashboard-data.md), not a scan per scrape.
func (s *Supervisor) WritePrometheus(ctx context.Context, w io.Writer) error {
	o, err := s.Overview(ctx)
	if err != nil {
		return err
	}
	byState, queued := o.Jobs, o.QueueDepth
	m := s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	// Every daemon of a cluster serves its own counters; this series
	// names the host and boot they are of (join on it to label them).
	kind := "bbolt"
	if s.cluster != nil {
		kind = "etcd"
	}
	p("# HELP cyber_supervisor_host_info The host boot these series are of.\n# TYPE cyber_supervisor_host_info gauge\n")
	p("cyber_supervisor_host_info{host=%q,boot=%q,generation=\"%d\",store=%q} 1\n", m.host, m.boot, m.generation, kind)
	p("# HELP cyber_supervisor_cluster_fenced_total Cluster registrations this host lost (it killed its workers and joined again).\n# TYPE cyber_supervisor_cluster_fenced_total counter\ncyber_supervisor_cluster_fenced_total %d\n", m.fencings)
	p("# HELP cyber_supervisor_cluster_recovered_attempts_total Attempts of departed hosts this host marked unknown.\n# TYPE cyber_supervisor_cluster_recovered_attempts_total counter\ncyber_supervisor_cluster_recovered_attempts_total %d\n", m.recoveredHost)
	if st, ok := s.cfg.Store.(interface {
		StoreStats() (reads, commits, conflicts, unknown uint64)
	}); ok {
		r, c, cf, u := st.StoreStats()
		p("# HELP cyber_supervisor_etcd_requests_total Requests this host made to etcd, by kind.\n# TYPE cyber_supervisor_etcd_requests_total counter\n")
		p("cyber_supervisor_etcd_requests_total{kind=\"read\"} %d\ncyber_supervisor_etcd_requests_total{kind=\"commit\"} %d\n", r, c)
		p("# HELP cyber_supervisor_etcd_conflicts_total Transactions run again because a key they read changed.\n# TYPE cyber_supervisor_etcd_conflicts_total counter\ncyber_supervisor_etcd_conflicts_total %d\n", cf)
		p("# HELP cyber_supervisor_etcd_unknown_outcomes_total Commits whose outcome was unknown and was resolved.\n# TYPE cyber_supervisor_etcd_unknown_outcomes_total counter\ncyber_supervisor_etcd_unknown_outcomes_total %d\n", u)
	}
	p("# HELP cyber_supervisor_jobs Jobs by state.\n# TYPE cyber_supervisor_jobs gauge\n")
	states := append([]lifecycle.State(nil), lifecycle.States...)
	sort.Slice(states, func(i, j int) bool { return states[i] < states[j] })
	for _, st := range states {
		p("cyber_supervisor_jobs{state=%q} %d\n", st, byState[st])
	}
	p("# HELP cyber_supervisor_queue_depth Jobs waiting for a slot.\n# TYPE cyber_supervisor_queue_depth gauge\ncyber_supervisor_queue_depth %d\n", queued)
	s.mu.Lock()
	running := len(s.active)
	s.mu.Unlock()
	p("# HELP cyber_supervisor_running_attempts Attempts running now.\n# TYPE cyber_supervisor_running_attempts gauge\ncyber_supervisor_running_attempts %d\n", running)
	p("# HELP cyber_supervisor_submitted_total Jobs admitted by this boot.\n# TYPE cyber_supervisor_submitted_total counter\ncyber_supervisor_submitted_total %d\n", m.submitted)
	p("# HELP cyber_supervisor_attempts_ended_total Attempts ended by this boot, by final state.\n# TYPE cyber_supervisor_attempts_ended_total counter\n")
	for _, st := range states {
		if st.Terminal() {
			p("cyber_supervisor_attempts_ended_total{state=%q} %d\n", st, m.ended[st])
		}
	}
	p("# HELP cyber_supervisor_kills_total Workers killed (deadline, cancel, shutdown).\n# TYPE cyber_supervisor_kills_total counter\ncyber_supervisor_kills_total %d\n", m.kills)
	p("# HELP cyber_supervisor_ooms_total Workers killed by their memory limit.\n# TYPE cyber_supervisor_ooms_total counter\ncyber_supervisor_ooms_total %d\n", m.ooms)
	failing := 0
	if m.storeFailing {
		failing = 1
	}
	p("# HELP cyber_supervisor_store_write_failures_total Store writes that failed on the host's I/O (full disk, quota, device).\n# TYPE cyber_supervisor_store_write_failures_total counter\ncyber_supervisor_store_write_failures_total %d\n", m.storeFailures)
	p("# HELP cyber_supervisor_store_failing 1 while store writes fail on the host's I/O.\n# TYPE cyber_supervisor_store_failing gauge\ncyber_supervisor_store_failing %d\n", failing)
	p("# HELP cyber_supervisor_attempt_seconds Attempt wall time, launch to teardown.\n# TYPE cyber_supervisor_attempt_seconds histogram\n")
	for i, b := range m.buckets {
		p("cyber_supervisor_attempt_seconds_bucket{le=\"%g\"} %d\n", b, m.counts[i])
	}
	p("cyber_supervisor_attempt_seconds_bucket{le=\"+Inf\"} %d\ncyber_supervisor_attempt_seconds_sum %g\ncyber_supervisor_attempt_seconds_count %d\n", m.count, m.sum, m.count)
	return nil
}
