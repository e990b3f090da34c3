package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/natslog"
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
			items, err := auditItems(cmd.Context(), b, args[0])
			if err != nil {
				return err
			}
			return printAudit(g, items)
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
		if wi, werr := wsadapter.Timeline(ctx, b.log, arg); werr == nil {
			return wi, nil
		}
	}
	if err != nil {
		return nil, err
	}
	ids, err := sessionCommands(ctx, b.log, id)
	if err != nil {
		return nil, err
	}
	// A session whose every event the log quarantined reads as
	// none: it is shown below, as what it is.
	items, err := replay.SessionTimeline(ctx, b.log, id, ids)
	notFound := errors.Is(err, events.ErrNotFound)
	if err != nil && !notFound {
		return nil, err
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
		return nil, err
	}
	return replay.WithUnattested(items, us), nil
}

// printAudit prints an audit timeline, as JSON with --json.
func printAudit(g *globals, items []replay.Item) error {
	if g.json {
		return writeJSON(g.stdout, items)
	}
	width := termWidth(g.stdout)
	return termPrint(g.stdout, func(w io.Writer) error {
		if width < 40 {
			return replay.WriteText(w, items)
		}
		var b strings.Builder
		if err := replay.WriteText(&b, items); err != nil {
			return err
		}
		_, err := io.WriteString(w, wrapLines(b.String(), width))
		return err
	})
}

// wrapLines wraps each line of s longer than width terminal columns
// (displayWidth) at spaces, its continuation lines indented four spaces:
// an audit line read on a terminal, not cut by it. A word longer than a
// line is left whole.
func wrapLines(s string, width int) string {
	var out strings.Builder
	for line := range strings.Lines(s) {
		line = strings.TrimSuffix(line, "\n")
		indent := ""
		for displayWidth(indent+line) > width {
			room := width - len(indent)
			cut, w := -1, 0
			for i, r := range line {
				if w > room {
					break
				}
				if r == ' ' && i > 0 {
					cut = i // the last space with at most room columns before it
				}
				w += runeWidth(r)
			}
			if cut <= 0 {
				break
			}
			out.WriteString(indent + strings.TrimRight(line[:cut], " ") + "\n")
			line = strings.TrimLeft(line[cut:], " ")
			indent = "    "
		}
		out.WriteString(indent + line + "\n")
	}
	return out.String()
}

// sessionCommands returns the ids of the commands requested for session,
// in stream order, read from the log alone: every command event's type
// header is looked at, and only requests are decoded.
func sessionCommands(ctx context.Context, log *natslog.Log, session string) ([]string, error) {
	var ids []string
	for m, err := range log.ReadRaw(ctx, worker.CommandFilter, 1) {
		if err != nil {
			return nil, fmt.Errorf("commands of session %s: %w", session, err)
		}
		if m.Header.Get(natslog.HeaderType) != (events.CommandRequested{}).EventType() {
			continue
		}
		var req struct {
			Agg  events.Aggregate `json:"agg"`
			Data struct {
				Session string `json:"session"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Data, &req) == nil && req.Data.Session == session {
			ids = append(ids, req.Agg.ID)
		}
	}
	return ids, nil
}
