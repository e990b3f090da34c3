package main

import (
	"github.com/spf13/cobra"
	"io"

	"github.com/logbook-dev/logbook/replay"
)

func auditCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "audit SESSION",
		Short: "Print a session's audit timeline: every transition, entry, verdict and abandonment, with its cause",
		Long: `audit reads one session's events from the log and prints every transition
(from → to, activity), every entry opened, closed or abandoned, every mode
change, review request and verdict, the end, and every event of the
commands run for it (requested, started, stdin, stop, exited, abandoned …)
— each with its stream sequence, time, cause, and the observation it came
from.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := openBackend(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer b.Close()
			ids, err := sessionCommands(cmd.Context(), b.log, args[0])
			if err != nil {
				return err
			}
			items, err := replay.SessionTimeline(cmd.Context(), b.log, args[0], ids)
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(g.stdout, items)
			}
			return termPrint(g.stdout, func(w io.Writer) error { return replay.WriteText(w, items) })
		},
	}
}
