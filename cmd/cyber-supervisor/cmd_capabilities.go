package main

import (
	"bytes"

	"github.com/spf13/cobra"
)

func newCapabilitiesCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "capabilities",
		Short: "Show what the daemon's host enforces",
		Long: `Show what the daemon's host enforces: the contract capabilities jobs are
admitted against (which limits are enforced, which operations offered) and
the host probe behind them; for a limit not enforced, the probe's reason.
--format json prints the daemon's whole reply, the probe's every field.`,
		GroupID: groupHost,
		Args:    noArgs("capabilities"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dm, err := a.dialReaderWith(a.hostCapabilities(cmd.Context()))
			if err != nil {
				return a.report("capabilities", nil, err, nil)
			}
			raw, err := dm.Capabilities(cmd.Context())
			if err != nil {
				return a.report("capabilities", nil, dm.err(err), nil)
			}
			if a.json() {
				return a.report("capabilities", raw, nil, nil)
			}
			var buf bytes.Buffer
			if err := printCapabilities(&buf, raw); err != nil {
				return a.report("capabilities", nil, err, nil)
			}
			return a.report("capabilities", raw, nil, func() { a.stdout.Write(buf.Bytes()) })
		},
	}
}
