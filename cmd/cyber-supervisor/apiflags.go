package main

import (
	"time"

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

// check refuses values out of bounds before anything starts. A zero is
// refused here, not read as the default the way api.Config reads an
// unset field: every flag has its default already, so a 0 was typed.
func (f *apiFlags) check() error {
	if f.cfg.MaxConns == 0 {
		return usagef("--api-max-conns 0: at least 1")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--api-header-timeout", f.cfg.HeaderTimeout}, {"--api-body-timeout", f.cfg.BodyTimeout},
		{"--api-idle-timeout", f.cfg.IdleTimeout}, {"--api-write-timeout", f.cfg.WriteTimeout}} {
		if d.v == 0 {
			return usagef("%s 0s: a timeout must be at least 1ms", d.flag)
		}
	}
	if err := f.cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}
