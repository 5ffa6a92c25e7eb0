package main

import (
	"flag"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// apiFlags bound what clients of serve's socket can hold (docs/supervisor.md).
type apiFlags struct{ cfg api.Config }

func (a *apiFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&a.cfg.MaxConns, "api-max-conns", api.DefaultMaxConns, "API connections held at once; at the cap a new one replaces the longest waiting without a request in progress")
	fs.DurationVar(&a.cfg.HeaderTimeout, "api-header-timeout", api.DefaultHeaderTimeout, "time a client has to send a request's line and headers")
	fs.DurationVar(&a.cfg.BodyTimeout, "api-body-timeout", api.DefaultBodyTimeout, "time a client has to send a request's body")
	fs.DurationVar(&a.cfg.IdleTimeout, "api-idle-timeout", api.DefaultIdleTimeout, "an idle kept-alive API connection is closed after this")
	fs.DurationVar(&a.cfg.WriteTimeout, "api-write-timeout", api.DefaultWriteTimeout, "time a client has to read one answer")
}
