package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
	"github.com/cyberia-to/cyber-supervisor/worker"
)

// The supervisor configures the worker through the environment
// (protocol.EnvWorker*; the sandbox passes only what it is told to); any
// that is unset falls back to the worker's defaults (generated ids, no
// work root).
func configFromEnv(getenv func(string) string) worker.Config {
	return worker.Config{
		WorkerID: getenv(protocol.EnvWorkerID),
		DeviceID: getenv(protocol.EnvWorkerDeviceID),
		BootID:   getenv(protocol.EnvWorkerBootID),
		Network:  getenv(protocol.EnvWorkerNetwork),
		WorkRoot: getenv(protocol.EnvWorkerWorkRoot),
		// A direct command has its host to itself; the supervisor says
		// "off" when its slots take every CPU.
		ProvePipeline: getenv(protocol.EnvWorkerProvePipeline) != "off",
		// The plugin and the direct commands run one job in a process
		// of their own.
		OwnProcess: true,
	}
}

// servePlugin serves the worker protocol until the supervisor shuts the
// worker down or goes away. A missing or wrong cookie is explained on
// stderr.
func servePlugin(getenv func(string) string, stderr io.Writer) int {
	w, err := worker.New(configFromEnv(getenv))
	if err != nil {
		fmt.Fprintln(stderr, "nox-worker:", err)
		return exitFailed
	}
	if err := pluginserver.Serve(withRunProcs(w), pluginserver.Config{Getenv: getenv, Stderr: stderr}); err != nil {
		if !errors.Is(err, pluginserver.ErrNotLaunchedAsPlugin) {
			fmt.Fprintln(stderr, "nox-worker:", err)
		}
		return exitFailed
	}
	return exitOK
}
