package main

import (
	"fmt"
	"log/slog"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// sayReady logs the one line an operator looks for when the daemon has
// come up (what it listens on, its slots, whether its workers are
// jailed) and tells systemd the same (READY=1 with a STATUS= line).
func (a *app) sayReady(log *slog.Logger, sd *notifier, sup *supervisor.Supervisor, home string, slots int, metrics *api.MetricsServer) {
	caps := sup.Capabilities()
	isolation := "unknown"
	if h := sup.Host(); h != nil && h.Isolation != "" {
		isolation = h.Isolation
	}
	socket := supervisor.SocketPath(home)
	attrs := []any{"socket", socket}
	if metrics != nil {
		attrs = append(attrs, "metrics", "http://"+metrics.Addr().String()+"/metrics")
	}
	attrs = append(attrs, "slots", slots, "isolation", isolation, "home", home, "host", sup.HostID(), "boot", sup.Boot(),
		"generation", sup.Generation(), "backend", caps.Backend, "memory_limit", caps.Limits.Memory, "wall_time", caps.Limits.WallTime)
	log.Info("supervisor ready", attrs...)
	status := fmt.Sprintf("STATUS=serving on %s: %d slots, workers %s", socket, slots, isolation)
	if err := sd.notify("READY=1", status); err != nil {
		log.Warn("tell systemd", "err", err)
	}
}
