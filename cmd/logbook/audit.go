package main

import (
	"context"
	"errors"
	"fmt"
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
			if sock := g.socketPath(); sock != "" {
				return auditViaSocket(cmd.Context(), g, sock, args[0])
			}
			b, err := openBackend(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer b.Close()
			b.fastPath(cmd.Context())
			items, err := auditItems(cmd.Context(), b, args[0])
			if err != nil {
				return err
			}
			width := term.Width(g.stdout)
			return emit(g, items, func(w io.Writer) error { return term.Audit(w, items, width) })
		},
	}
}

// auditItems returns the audit timeline of session (an id or a unique
// prefix) or, when no session has that id, of the workspace named so:
// every event, with the ones the log could not attest in their place.
func auditItems(ctx context.Context, b *backend, arg string) ([]replay.Item, error) {
	id, err := resolveID(ctx, b, events.KindSession, arg)
	var nf *notFoundError
	if errors.As(err, &nf) {
		// Not a session: a workspace's whole life, if it is one.
		wi, werr := wsadapter.Timeline(ctx, b.log, arg)
		if werr == nil {
			return wi, nil
		}
		if errors.Is(werr, events.ErrNotFound) {
			return nil, &notFoundError{msg: fmt.Sprintf("%q not found: neither a session nor a workspace has that id (see `logbook sessions --all`, `logbook workspace list`)", arg)}
		}
	}
	if err != nil {
		return nil, err
	}
	// The log left the events it could not attest out of the timeline:
	// each is shown, in its place, as unattested.
	return worker.SessionAudit(ctx, b.log, id, func() []replay.Unattested { return unattested(b.log, "") })
}
