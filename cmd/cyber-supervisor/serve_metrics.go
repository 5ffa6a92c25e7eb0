package main

import (
	"encoding/json"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// metricsFlags open serve's optional TCP listener for Prometheus
// (api.MetricsConfig; docs/supervisor.md, "Metrics for Prometheus").
type metricsFlags struct {
	listen      string
	allowRemote bool
}

func (m *metricsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&m.listen, "metrics-listen", "", "also serve GET /metrics, /healthz and /version over TCP on this loopback HOST:PORT for Prometheus, e.g. 127.0.0.1:9464 (default: none; the unix socket serves /metrics always)")
	fs.BoolVar(&m.allowRemote, "metrics-allow-remote", false, "let --metrics-listen bind an address that is not loopback: the port has no authentication, so anyone who reaches it reads the metrics")
}

// check refuses an address the listener would refuse, before anything
// starts.
func (m *metricsFlags) check(fs *pflag.FlagSet) error {
	if m.listen == "" {
		if fs.Changed("metrics-allow-remote") {
			return usagef("--metrics-allow-remote needs --metrics-listen")
		}
		return nil
	}
	if err := api.CheckMetricsAddr(m.listen, m.allowRemote); err != nil {
		return usagef("--metrics-listen: %s", strings.TrimPrefix(err.Error(), api.ErrMetricsAddr.Error()+" "))
	}
	return nil
}

// config is the listener's configuration, or nil when none was asked.
func (m *metricsFlags) config() *api.MetricsConfig {
	if m.listen == "" {
		return nil
	}
	v, _ := json.Marshal(readBuildVersion()) // strings and a *bool only
	return &api.MetricsConfig{Addr: m.listen, AllowRemote: m.allowRemote, Version: append(v, '\n')}
}
