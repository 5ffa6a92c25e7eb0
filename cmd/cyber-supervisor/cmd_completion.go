package main

import (
	"github.com/spf13/cobra"
)

func newCompletionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print the completion script of bash, zsh or fish on stdout. For example:

  cyber-supervisor completion bash > /etc/bash_completion.d/cyber-supervisor
  cyber-supervisor completion zsh > "${fpath[1]}/_cyber-supervisor"
  cyber-supervisor completion fish > ~/.config/fish/completions/cyber-supervisor.fish`,
		GroupID:   groupHost,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("completion needs one shell: bash, zsh or fish")
			}
			if err := cobra.OnlyValidArgs(cmd, args); err != nil {
				return usagef("%q is not bash, zsh or fish", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(a.stdout, true)
			case "zsh":
				err = root.GenZshCompletion(a.stdout)
			default:
				err = root.GenFishCompletion(a.stdout, true)
			}
			if err != nil {
				return a.report("completion", nil, err, nil)
			}
			return nil
		},
	}
}
