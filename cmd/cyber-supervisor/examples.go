package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// commandExamples is the Example of every command, by its path without
// the root's name ("" is the root). They live together so that one page
// reads as the operator's daily tour and stays consistent (one job id,
// one prog id, the files in examples/). TestEveryCommandHasExamples
// fails on a command without one, and parses every line: it must name
// its own command, with flags and arguments that command accepts.
//
// Each example is a "# what it does" line, then the invocation; ids are
// as the CLI prints them (jobs: job-<16 hex>; progs, invocations and
// operations: unique hex prefixes of at least 6 digits).
var commandExamples = map[string]string{
	"": `
# print the module version and VCS revision of this build
cyber-supervisor --version
# the same as one cyber/cli/v1 envelope, for scripts
cyber-supervisor --version --format json`,

	// Daemon and one-shot runs.
	"serve": `
# run the daemon with the settings of a file (contrib/serve.yaml), 8 slots whatever it says
cyber-supervisor serve --config /etc/cyber-supervisor/serve.yaml --slots 8
# refuse to start unless workers are jailed; 4 slots, 256MiB a job by default; metrics on a loopback port
cyber-supervisor --home /var/lib/cyber-supervisor serve --isolation required --slots 4 --default-memory 256MiB --metrics-listen 127.0.0.1:9464
# share one job queue with other hosts through etcd
cyber-supervisor serve --store etcd://10.0.0.5:2379/cyber --host-id host-a`,
	"run": `
# prove a + b for 3 and 5 and print the verified output (8)
cyber-supervisor run examples/add.nox --op prove --input-values 3,5
# count down from 300 within 64MiB and 5s, as a JSON envelope
cyber-supervisor run examples/countdown.nox --input-values 300 --memory 64MiB --time 5s --format json
# check a certificate nox-worker prove wrote, and that its output is 8
cyber-supervisor run examples/add.nox --op verify --artifact /tmp/add.cnxt.zst --input-values 3,5 --expect 8`,
	"drain": `
# stop taking jobs, give running ones 10 minutes, then stop the daemon
cyber-supervisor drain --timeout 10m
# begin the drain and return at once (the daemon stops by itself)
cyber-supervisor drain --no-wait`,

	// Jobs.
	"submit": `
# submit a proof and wait for its verified result (progress on stderr)
cyber-supervisor submit examples/add.nox --op prove --input-values 3,5 --wait
# submit and print the job id only
cyber-supervisor submit examples/hashchain.nox --op prove --input-values 50,7
# a job of your own id and priority, 64MiB, two retries
cyber-supervisor submit examples/countdown.nox --input-values 300 --job-id nightly-0001 --priority 10 --memory 64MiB --retries 2`,
	"status": `
# a job's state, output, reductions and each attempt's time
cyber-supervisor status job-622872b0ec721887
# the same as one JSON envelope
cyber-supervisor status job-622872b0ec721887 --format json`,
	"list": `
# the newest 20 accepted jobs
cyber-supervisor list --state accepted --limit 20
# jobs a crash left unknown (for resolve), as JSON
cyber-supervisor list --state unknown --format json
# the list, then each job submitted or changed as it happens, until Ctrl-C
cyber-supervisor list --watch`,
	"events": `
# a job's transitions with time and reason
cyber-supervisor events job-622872b0ec721887
# follow them as they happen, until the job has ended
cyber-supervisor events --follow job-622872b0ec721887
# only the jobs that fail, as they fail (every job's: --all), until Ctrl-C
cyber-supervisor events --follow --state failed`,
	"result": `
# print a job's accepted output, one value per line
cyber-supervisor result job-622872b0ec721887
# the same as one JSON envelope
cyber-supervisor result job-622872b0ec721887 --format json`,
	"cancel": `
# cancel a job (a running one is killed after the grace)
cyber-supervisor cancel job-622872b0ec721887
# cancel it and record why in its events
cyber-supervisor cancel job-622872b0ec721887 --reason "wrong inputs"`,
	"resolve": `
# a job left unknown by a crash at attempt 1: run it once more
cyber-supervisor resolve job-622872b0ec721887 --attempt 1 --retry
# or end it cancelled, saying why
cyber-supervisor resolve job-622872b0ec721887 --attempt 1 --cancel --reason "effect already applied"`,
	"gc": `
# remove every ended job and its sandbox, keeping tombstones
cyber-supervisor gc
# only jobs that ended at least 30 days ago
cyber-supervisor gc --older-than 720h
# only failed jobs
cyber-supervisor gc --state failed`,

	// Neuron, progs and acts.
	"neuron": `
# make the neuron of this home (see neuron init)
cyber-supervisor neuron init --network mainnet
# look at it, its root, placement and grant
cyber-supervisor neuron show`,
	"neuron init": `
# make the neuron pinned to mainnet: key, root and first grant
cyber-supervisor neuron init --network mainnet
# the same on another home
cyber-supervisor neuron init --network testnet --home /srv/sup-test`,
	"neuron show": `
# the neuron, its root, its placement and its grant
cyber-supervisor neuron show
# the same as JSON
cyber-supervisor neuron show --format json`,
	"neuron policy": `
# a new policy under epoch 2 (then grant set for it, invocation rebind)
cyber-supervisor neuron policy --policy 5f0c6a3e9b1d2c4f8a7e6d5c4b3a29180f1e2d3c4b5a69788796a5b4c3d2e1f0 --epoch 2
# a later one under epoch 3, printing the new root as JSON
cyber-supervisor neuron policy --policy 5f0c6a3e9b1d2c4f8a7e6d5c4b3a29180f1e2d3c4b5a69788796a5b4c3d2e1f0 --epoch 3 --format json`,
	"grant": `
# the current grant and its revision
cyber-supervisor grant show
# grant emit and host from revision 0 (see grant set)
cyber-supervisor grant set --revision 0 --acts emit,host`,
	"grant show": `
# the acts and progs the neuron permits, with the revision
cyber-supervisor grant show
# the same as JSON
cyber-supervisor grant show --format json`,
	"grant set": `
# grant emit and host to every prog (revision 0 to 1)
cyber-supervisor grant set --revision 0 --acts emit,host
# revoke every act: dispatches after this are denied
cyber-supervisor grant set --revision 1 --acts ''
# emit only, and only for one prog
cyber-supervisor grant set --revision 2 --acts emit --progs 9f2c4e71`,
	"placement": `
# the placement generation and its worker
cyber-supervisor placement show
# bind the daemon's worker, a CAS from generation 3
cyber-supervisor placement bind --generation 3`,
	"placement show": `
# the placement generation and its worker
cyber-supervisor placement show
# the same as JSON
cyber-supervisor placement show --format json`,
	"placement bind": `
# bind the daemon's (or this command's) worker: generation 3 to 4
cyber-supervisor placement bind --generation 3
# the same, printing the new root as JSON
cyber-supervisor placement bind --generation 3 --format json`,
	"placement release": `
# release the worker: generation 4 to 5, none may dispatch
cyber-supervisor placement release --generation 4
# the same, printing the new root as JSON
cyber-supervisor placement release --generation 4 --format json`,
	"prog": `
# install a program that may call emit; prints the prog id
cyber-supervisor prog install emit2.nox --acts emit
# the installed progs
cyber-supervisor prog list`,
	"prog install": `
# install a program that may call emit; prints the prog id
cyber-supervisor prog install emit2.nox --acts emit
# with tighter bounds: 65536 steps, 8 invocations at once
cyber-supervisor prog install emit2.nox --acts emit,host --step-limit 65536 --max-inflight 8`,
	"prog upgrade": `
# revision 0 to 1 with a new program, acts and bounds kept
cyber-supervisor prog upgrade 9f2c4e71 emit9.nox --revision 0
# revision 1 to 2, with more steps
cyber-supervisor prog upgrade 9f2c4e71 emit9.nox --revision 1 --step-limit 2097152`,
	"prog list": `
# the installed progs
cyber-supervisor prog list
# the same as JSON
cyber-supervisor prog list --format json`,
	"prog show": `
# a prog and its revisions, by a unique prefix of its id
cyber-supervisor prog show 9f2c4e71
# the same as JSON, the first revision first
cyber-supervisor prog show 9f2c4e71 --format json`,
	"prog pause": `
# pause a prog: its invocations are not run or dispatched
cyber-supervisor prog pause 9f2c4e71
# the same, printing the prog as JSON
cyber-supervisor prog pause 9f2c4e71 --format json`,
	"prog resume": `
# make a paused prog active again (its acts must be in the grant)
cyber-supervisor prog resume 9f2c4e71
# the same, printing the prog as JSON
cyber-supervisor prog resume 9f2c4e71 --format json`,
	"prog retire": `
# retire a prog that has no live invocation
cyber-supervisor prog retire 9f2c4e71
# the same, printing the prog as JSON
cyber-supervisor prog retire 9f2c4e71 --format json`,
	"invoke": `
# invoke a prog with input 5, wait and print its output
cyber-supervisor invoke 9f2c4e71 --input-values 5 --wait
# start an invocation and print its id
cyber-supervisor invoke 9f2c4e71 --input-values 5
# a child of a live invocation, on 5000 steps it delegates
cyber-supervisor invoke 9f2c4e71 --parent c03a5b18 --steps 5000`,
	"invocation": `
# the invocations that are not archived
cyber-supervisor invocation list
# one of them, by a unique prefix of its id
cyber-supervisor invocation show c03a5b18`,
	"invocation list": `
# the invocations that are not archived
cyber-supervisor invocation list
# the same as JSON
cyber-supervisor invocation list --format json`,
	"invocation show": `
# an invocation: revision, parent, children, delegated steps
cyber-supervisor invocation show c03a5b18
# the same as JSON
cyber-supervisor invocation show c03a5b18 --format json`,
	"invocation cancel": `
# cancel a live invocation and the live ones below it
cyber-supervisor invocation cancel c03a5b18
# the same, printing it as JSON
cyber-supervisor invocation cancel c03a5b18 --format json`,
	"invocation archive": `
# archive an ended invocation (a top-level one moves with its tree)
cyber-supervisor invocation archive c03a5b18
# the same, printing it as JSON
cyber-supervisor invocation archive c03a5b18 --format json`,
	"invocation rebind": `
# after neuron policy: move an invocation to the current epoch
cyber-supervisor invocation rebind c03a5b18
# the same, printing it as JSON
cyber-supervisor invocation rebind c03a5b18 --format json`,
	"operation": `
# every operation: attempts, claims, outcomes, unknown ones
cyber-supervisor operation list
# an unknown attempt's act did run: its outcome is 7
cyber-supervisor operation reconcile 5e7d90aa --attempt 1 --value 7`,
	"operation list": `
# every operation: attempts, claims, outcomes, unknown ones
cyber-supervisor operation list
# only those of one invocation
cyber-supervisor operation list c03a5b18
# as JSON
cyber-supervisor operation list c03a5b18 --format json`,
	"operation take": `
# record a manual attempt of the invocation's pending operation
cyber-supervisor operation take c03a5b18
# the same as JSON
cyber-supervisor operation take c03a5b18 --format json`,
	"operation reconcile": `
# the act of attempt 1 did run: its outcome is 7
cyber-supervisor operation reconcile 5e7d90aa --attempt 1 --value 7
# the act of attempt 1 did not run: a failure
cyber-supervisor operation reconcile 5e7d90aa --attempt 1 --failed "no line written"`,

	// Store.
	"store": `
# every record and invariant of the home's store
cyber-supervisor store check
# a consistent copy while the daemon runs
cyber-supervisor store backup /backups/sup.db`,
	"store check": `
# every record and invariant of the home's store
cyber-supervisor store check
# a backup file instead, as JSON
cyber-supervisor store check --file /backups/sup.db --format json`,
	"store backup": `
# a consistent copy while the daemon runs
cyber-supervisor store backup /backups/sup.db
# of another home
cyber-supervisor store backup /backups/sup-test.db --home /srv/sup-test`,
	"store restore": `
# the daemon stopped: put a backup in place (the next start fences it)
cyber-supervisor store restore /backups/sup.db
# the same, as JSON
cyber-supervisor store restore /backups/sup.db --format json`,

	// Host and build.
	"capabilities": `
# what this host enforces, the operator limits, the probe
cyber-supervisor capabilities
# the same as JSON
cyber-supervisor capabilities --format json`,
	"dashboard": `
# serve the dashboard on a free loopback port; open the URL it prints
cyber-supervisor dashboard
# on a fixed port, for an ssh -L 8080:127.0.0.1:8080 from your desk
cyber-supervisor dashboard --listen 127.0.0.1:8080
# the dashboard of another home (read-only when no daemon owns it)
cyber-supervisor --home /srv/sup-test dashboard`,
	"hosts": `
# the live hosts of the job store: generation, slots, unfinished attempts
cyber-supervisor hosts
# the same as JSON
cyber-supervisor hosts --format json`,
	"version": `
# the module version and VCS revision of this build
cyber-supervisor version
# the same as JSON
cyber-supervisor version --format json`,
	"completion": `
# install bash completion system-wide
cyber-supervisor completion bash > /etc/bash_completion.d/cyber-supervisor
# zsh, into the first directory of $fpath
cyber-supervisor completion zsh > "${fpath[1]}/_cyber-supervisor"
# fish, for this user
cyber-supervisor completion fish > ~/.config/fish/completions/cyber-supervisor.fish`,
	"help": `
# the help of one command
cyber-supervisor help run
# of a subcommand
cyber-supervisor help store check`,
}

// setExamples gives every command its Example from commandExamples,
// indented by two spaces as cobra indents its own help.
func setExamples(root *cobra.Command) {
	// The help command joins the tree only at Execute; add it now so
	// that it gets its example too (cobra adds it once either way).
	root.InitDefaultHelpCmd()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if text, ok := commandExamples[commandPath(c)]; ok {
			c.Example = indentExample(text)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// commandPath is c's path without the root's name: "store check".
func commandPath(c *cobra.Command) string {
	path, root := c.CommandPath(), c.Root().Name()
	if path == root {
		return ""
	}
	return strings.TrimPrefix(path, root+" ")
}

func indentExample(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}
