package main

import (
	"bytes"
	"io"

	"github.com/spf13/cobra"
)

func newCompletionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:       "completion bash|zsh|fish",
		Short:     "Print a shell completion script",
		Long:      "Print the completion script of bash, zsh or fish on stdout (see the examples).",
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
			// With --format json the script is the envelope's result
			// (`jq -r .result.script` gives it back).
			var out io.Writer = a.stdout
			var buf bytes.Buffer
			if a.json() {
				out = &buf
			}
			root := cmd.Root()
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(out, true)
			case "zsh":
				err = root.GenZshCompletion(out)
			default:
				err = root.GenFishCompletion(out, true)
			}
			if err != nil || a.json() {
				return a.report("completion", completionReport{Shell: args[0], Script: buf.String()}, err, nil)
			}
			return nil
		},
	}
}
