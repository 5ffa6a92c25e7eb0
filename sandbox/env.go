package sandbox

import (
	"strings"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

const (
	pluginEnvPrefix  = "PLUGIN_"
	envSocketDir     = "PLUGIN_UNIX_SOCKET_DIR"
	envSocketGroup   = "PLUGIN_UNIX_SOCKET_GROUP"
	jailSocketDir    = gate.SocketDir
	jailWorkDir      = gate.WorkDir
	jailWorkerPath   = gate.WorkerPath
	jailTmpDir       = gate.TmpDir
	initArg          = gate.Arg
	initExitNoConfig = gate.ExitNoConfig
	initExitSetup    = gate.ExitSetup
)

// workerEnv builds the worker's environment from go-plugin's command
// environment: only PLUGIN_* and the names in pass survive (last one wins,
// as with execve), then extra is appended. In the jail the socket directory
// is rewritten to its in-jail path and the socket group is dropped (there is
// no group database inside to resolve it against).
func workerEnv(pluginEnv, pass, extra []string, jailed bool) []string {
	keep := make(map[string]bool, len(pass))
	for _, k := range pass {
		keep[k] = true
	}
	idx := map[string]int{}
	var out []string
	for _, kv := range pluginEnv {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.IndexByte(kv, 0) >= 0 {
			continue
		}
		if !strings.HasPrefix(k, pluginEnvPrefix) && !keep[k] {
			continue
		}
		if jailed {
			switch k {
			case envSocketGroup:
				continue
			case envSocketDir:
				kv = envSocketDir + "=" + jailSocketDir
			}
		}
		if i, seen := idx[k]; seen {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return append(out, extra...)
}
