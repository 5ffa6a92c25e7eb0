package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
)

// Shell completion of the ids commands take (cobra's dynamic completion:
// the shell's script runs `cyber-supervisor __complete CMD ARGS... WORD`
// and offers what it prints). The ids come from the home's daemon, the
// same --home as the command line names; without a daemon, or when it
// does not answer within completeTimeout, nothing is offered (and no file
// names either). Nothing is ever written to stderr from here: a shell
// prints what a completion says into the operator's command line.

// completeTimeout bounds the whole question to the daemon: a shell waits
// for it on each Tab.
const completeTimeout = 1500 * time.Millisecond

// completeJobs is how many of the newest jobs are offered.
const completeJobs = 1000

// idKind is what an argument names.
type idKind int

const (
	idJob idKind = iota
	idProg
	idInvocation
	idOperation
)

// idCompletions are the commands (by path below the root) whose first
// argument is an id, and what it names.
var idCompletions = map[string]idKind{
	"status":              idJob,
	"result":              idJob,
	"events":              idJob,
	"cancel":              idJob,
	"resolve":             idJob,
	"invoke":              idProg,
	"prog show":           idProg,
	"prog pause":          idProg,
	"prog resume":         idProg,
	"prog retire":         idProg,
	"prog upgrade":        idProg,
	"invocation show":     idInvocation,
	"invocation cancel":   idInvocation,
	"invocation archive":  idInvocation,
	"invocation rebind":   idInvocation,
	"operation list":      idInvocation,
	"operation take":      idInvocation,
	"operation reconcile": idOperation,
}

// idFlagCompletions are flags whose value is an id.
var idFlagCompletions = map[string]map[string]idKind{
	"invoke": {"parent": idInvocation},
}

// registerIDCompletions sets the completion of every id argument and id
// flag of root's commands.
func registerIDCompletions(a *app, root *cobra.Command) {
	for path, kind := range idCompletions {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil || commandName(c) != path {
			panic("id completion of a command that is not there: " + path)
		}
		c.ValidArgsFunction = func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			// The first argument only: prog upgrade's second is a FILE.
			if len(args) > 0 {
				if path == "prog upgrade" {
					return nil, cobra.ShellCompDirectiveDefault
				}
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return a.completeIDs(kind, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	for path, flags := range idFlagCompletions {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil {
			panic("id completion of a command that is not there: " + path)
		}
		for name, kind := range flags {
			if err := c.RegisterFlagCompletionFunc(name, func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return a.completeIDs(kind, toComplete), cobra.ShellCompDirectiveNoFileComp
			}); err != nil {
				panic("id completion of --" + name + " of " + path + ": " + err.Error())
			}
		}
	}
}

// completeIDs are the ids of kind that begin with prefix, each with a
// short description (a job's state, a prog's name), from the daemon.
func (a *app) completeIDs(kind idKind, prefix string) []cobra.Completion {
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	sock := supervisor.SocketPath(home)
	// Once, with the bound: the client's own retries of a refused
	// connection are for commands, not for a Tab.
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil
	}
	c.Close()
	cl := api.NewClient(sock)
	var out []cobra.Completion
	add := func(id, desc string) {
		if strings.HasPrefix(id, prefix) {
			out = append(out, cobra.CompletionWithDesc(id, desc))
		}
	}
	switch kind {
	case idJob:
		jobs, err := cl.ListLast(ctx, "", completeJobs)
		if err != nil {
			return nil
		}
		// Newest first: the one just submitted is the likeliest.
		for i := len(jobs) - 1; i >= 0; i-- {
			add(jobs[i].JobID, string(jobs[i].State))
		}
	case idProg:
		progs, err := cl.Progs(ctx)
		if err != nil {
			return nil
		}
		for _, p := range progs {
			add(p.ID, strings.TrimSpace(p.State+" "+p.Name))
		}
	case idInvocation:
		invs, err := cl.Invocations(ctx)
		if err != nil {
			return nil
		}
		for _, v := range invs {
			add(v.ID, v.Status)
		}
	case idOperation:
		ops, err := cl.Operations(ctx, "")
		if err != nil {
			return nil
		}
		for _, op := range ops {
			add(op.ID, op.StageName)
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return out
}
