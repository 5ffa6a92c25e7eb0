package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// ownSettings are run's flags that configure its own supervisor: a job
// handed to a daemon runs with the daemon's instead.
var ownSettings = []string{"worker", "isolation", "cgroup-name", "default-memory", "default-time", "max-memory", "max-time"}

// handOver checks what a run asked of its own supervisor against the
// daemon that takes its job: --isolation required is a demand, refused
// (unsupported_limit, exit 3, before the job is submitted) when the
// daemon's workers are not jailed with a hard memory limit; every other
// setting given is said not to apply, on stderr.
func (a *app) handOver(ctx context.Context, dm *daemon, d *daemonFlags) error {
	var given []string
	for _, name := range ownSettings {
		if d.fs.Changed(name) && !(name == "isolation" && d.isolation.value == "required") {
			given = append(given, "--"+name)
		}
	}
	if d.isolation.value == "required" {
		raw, err := dm.Capabilities(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return errInterruptedBeforeSubmit
			}
			return dm.err(err)
		}
		if why := notRequiredIsolation(raw); why != "" {
			return protocol.Errorf(protocol.CodeUnsupportedLimit,
				"--isolation required: the daemon that owns %s, which would run the job, %s (stop it, or run without --isolation required)", dm.home, why)
		}
	}
	if len(given) > 0 && !a.json() {
		fmt.Fprintf(a.stderr, "cyber-supervisor run: the daemon that owns %s runs the job with its own settings, so these are ignored: %s\n", dm.home, strings.Join(given, ", "))
	}
	return nil
}

// notRequiredIsolation says how the daemon's capabilities reply (raw)
// falls short of what --isolation required demands of a run's own
// launcher (jailed workers under a hard memory limit); "" when it does
// not.
func notRequiredIsolation(raw []byte) string {
	var v capabilitiesView
	if err := json.Unmarshal(raw, &v); err != nil {
		return "did not say what it enforces"
	}
	caps, err := protocol.ParseCapabilities(v.Capabilities)
	switch {
	case err != nil:
		return "did not say what it enforces"
	case v.Host == nil || v.Host.Isolation != "isolated":
		return "runs its workers without the jail"
	case !caps.Limits.Memory:
		return "enforces no hard memory limit"
	}
	return ""
}
