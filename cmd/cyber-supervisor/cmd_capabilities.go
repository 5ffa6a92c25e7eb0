package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

func newCapabilitiesCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "capabilities",
		Short: "Show what the daemon's host enforces",
		Long: `Show what the daemon's host enforces: the contract capabilities jobs are
admitted against (which limits are enforced, which operations offered) and
the host probe behind them.`,
		GroupID: groupHost,
		Args:    noArgs("capabilities"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dm, err := a.dialDaemon()
			if err != nil {
				return a.report("capabilities", nil, err, nil)
			}
			raw, err := dm.Capabilities(cmd.Context())
			if err != nil {
				return a.report("capabilities", nil, dm.err(err), nil)
			}
			return a.report("capabilities", raw, nil, func() {
				var v any
				json.Unmarshal(raw, &v)
				b, _ := json.MarshalIndent(v, "", "  ")
				fmt.Fprintln(a.stdout, string(b))
			})
		},
	}
}
