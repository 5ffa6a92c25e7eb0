package main

import (
	"bytes"

	"github.com/spf13/cobra"
)

// helpReport is the result of a command's help with --format json.
type helpReport struct {
	// Help is the text --format human prints.
	Help string `json:"help"`
}

// completionReport is the result of completion with --format json.
type completionReport struct {
	Shell  string `json:"shell"`
	Script string `json:"script"`
}

// jsonHelp makes help (-h, --help, help CMD) honour --format json: the
// text a human gets, as the result of one cyber/cli/v1 envelope, so that
// every output of --format json is one envelope.
func (a *app) jsonHelp(root *cobra.Command) {
	text := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if !a.json() {
			text(c, args)
			return
		}
		var buf bytes.Buffer
		c.SetOut(&buf)
		text(c, args)
		c.SetOut(a.stdout)
		// The envelope reports its own failure to write: the status is
		// cobra's to decide (help is exit 0).
		_ = a.report(commandName(c), helpReport{Help: buf.String()}, nil, nil)
	})
}
