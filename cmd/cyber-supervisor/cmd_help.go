package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// newHelpCmd replaces cobra's help command, which prints the root's help
// with exit 0 for a topic it does not know ("help frobnicate"): an
// unknown topic is a usage error like an unknown command.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Print the help of a command (help run, help store check): what it does, its arguments and its flags.",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usagef("unknown help topic %q (see cyber-supervisor --help)", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			parent, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range parent.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name()+"\t"+sub.Short)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}
