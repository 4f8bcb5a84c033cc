package main

import (
	"fmt"
	"strings"

	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/spf13/cobra"
)

// Usage errors (exit 2) are marked errkind.Usage where they arise, never
// recognised by their text: cobra returns plain errors, so each place that
// makes one is wrapped here.
//   - flag parsing: the root's FlagErrorFunc, inherited by every command;
//   - positional arguments: typeArgErrors wraps every command's Args;
//   - required flags and flag groups: validateFlags, run before cobra's
//     own check of the same rules;
//   - unknown commands: rootRun (the root takes arbitrary args so cobra
//     hands them to it instead of failing in its command search).

// usagef is a usage error (exit 2): a flag or argument is wrong.
func usagef(format string, args ...any) error {
	return errkind.Errorf(errkind.Usage, format, args...)
}

// typeArgErrors makes every Args validator under c return a usage error.
func typeArgErrors(c *cobra.Command) {
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			return errkind.Wrap(errkind.Usage, args(cmd, a))
		}
	}
	for _, sub := range c.Commands() {
		typeArgErrors(sub)
	}
}

// validateFlags checks the rules cobra checks after the pre-run hooks
// (MarkFlagRequired, flag groups), typed as usage errors.
func validateFlags(cmd *cobra.Command) error {
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return errkind.Wrap(errkind.Usage, err)
	}
	return errkind.Wrap(errkind.Usage, cmd.ValidateFlagGroups())
}

// rootRun is edgectl without a subcommand: help, or an unknown command.
func rootRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	hint := ""
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, which it sets only on its path
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return usagef("unknown command %q%s; see edgectl --help for the commands", args[0], hint)
}
