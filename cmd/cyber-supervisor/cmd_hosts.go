package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

func newHostsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "hosts",
		Short: "List the cluster's live hosts: boots, generations, slots, running attempts",
		Long: `List the hosts registered in the daemon's job store: each live host boot
with its placement generation (the revision of its registration, larger
for every later boot anywhere in the cluster), its slots and the attempts
it has not finished. On the home's own store the daemon is the one host.`,
		GroupID: groupHost,
		Args:    noArgs("hosts"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dm, err := a.dialDaemon()
			if err != nil {
				return a.report("hosts", nil, err, nil)
			}
			hosts, err := dm.Hosts(cmd.Context())
			if err != nil {
				return a.report("hosts", nil, dm.err(err), nil)
			}
			if hosts == nil {
				hosts = []apitypes.Host{}
			}
			return a.report("hosts", hosts, nil, func() { printHosts(a.stdout, hosts) })
		},
	}
}

func printHosts(w io.Writer, hosts []apitypes.Host) {
	for _, h := range hosts {
		self := ""
		if h.Self {
			self = " (this daemon)"
		}
		fmt.Fprintf(w, "%s%s\n  boot %s, generation %d, %d slots, since %s\n", h.Host, self, h.Boot, h.Generation, h.Slots,
			h.Started.Format(time.RFC3339))
		if h.Home != "" {
			fmt.Fprintf(w, "  home %s\n", h.Home)
		}
		running := "none"
		if len(h.Running) > 0 {
			running = strings.Join(h.Running, " ")
		}
		fmt.Fprintf(w, "  running: %s\n", running)
	}
}
