package main

import (
	"github.com/spf13/pflag"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// apiFlags bound what clients of serve's socket can hold (docs/supervisor.md).
type apiFlags struct{ cfg api.Config }

func (f *apiFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.cfg.MaxConns, "api-max-conns", api.DefaultMaxConns, "API connections held at once; at the cap a new one replaces the longest waiting without a request in progress")
	fs.DurationVar(&f.cfg.HeaderTimeout, "api-header-timeout", api.DefaultHeaderTimeout, "time a client has to send a request's line and headers")
	fs.DurationVar(&f.cfg.BodyTimeout, "api-body-timeout", api.DefaultBodyTimeout, "time a client has to send a request's body")
	fs.DurationVar(&f.cfg.IdleTimeout, "api-idle-timeout", api.DefaultIdleTimeout, "an idle kept-alive API connection is closed after this")
	fs.DurationVar(&f.cfg.WriteTimeout, "api-write-timeout", api.DefaultWriteTimeout, "time a client has to read one answer")
}

// check refuses values out of bounds before anything starts.
func (f *apiFlags) check() error {
	if err := f.cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}
