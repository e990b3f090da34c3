package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/worker"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

func auditCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "audit SESSION|WORKSPACE",
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
			id, err := resolveID(cmd.Context(), b, events.KindSession, args[0])
			var nf *notFoundError
			if errors.As(err, &nf) {
				// Not a session: a workspace's whole life, if it is one.
				if wi, werr := wsadapter.Timeline(cmd.Context(), b.log, args[0]); werr == nil {
					return printAudit(g, wi)
				}
			}
			if err != nil {
				return err
			}
			ids, err := worker.SessionCommands(cmd.Context(), b.log, id)
			if err != nil {
				return err
			}
			// A session whose every event the log quarantined reads as
			// none: it is shown below, as what it is.
			items, err := replay.SessionTimeline(cmd.Context(), b.log, id, ids)
			notFound := errors.Is(err, events.ErrNotFound)
			if err != nil && !notFound {
				return err
			}
			// The log left the events it could not attest out of the
			// timeline: each is shown, in its place, as unattested.
			subjects := map[string]bool{events.Aggregate{Kind: events.KindSession, ID: id}.Subject(): true}
			for _, c := range ids {
				subjects[events.Aggregate{Kind: events.KindCommand, ID: c}.Subject()] = true
			}
			var us []replay.Unattested
			for _, u := range unattested(b.log, "") {
				if subjects[u.Subject] {
					us = append(us, u)
				}
			}
			if notFound && len(us) == 0 {
				return err
			}
			return printAudit(g, replay.WithUnattested(items, us))
		},
	}
}

// printAudit prints an audit timeline, as JSON with --json.
func printAudit(g *globals, items []replay.Item) error {
	if g.json {
		return writeJSON(g.stdout, items)
	}
	width := term.Width(g.stdout)
	return termPrint(g.stdout, func(w io.Writer) error { return term.Audit(w, items, width) })
}
