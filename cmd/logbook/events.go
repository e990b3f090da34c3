package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/events"
)

func eventsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "events", Short: "Read the event log"}
	var (
		follow bool
		n      uint64
		from   uint64
	)
	tail := &cobra.Command{
		Use:   "tail",
		Short: "Print the last events of the log, and with --follow the ones that come",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			b, err := openBackend(ctx, g)
			if err != nil {
				return err
			}
			defer b.Close()
			last, err := b.log.LastSeq(ctx)
			if err != nil {
				return err
			}
			start := from
			if start == 0 {
				start = 1
				if last > n {
					start = last - n + 1
				}
			}
			read := b.log.Read
			if follow {
				read = b.log.Follow
			}
			for r, err := range read(ctx, start) {
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				if err := printRecord(g.stdout, r, g.json); err != nil {
					return err
				}
			}
			if follow && ctx.Err() != nil {
				return nil
			}
			return nil
		},
	}
	tail.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events until interrupted")
	tail.Flags().Uint64VarP(&n, "lines", "n", 20, "how many of the last events to print")
	tail.Flags().Uint64Var(&from, "from", 0, "start at this stream sequence instead")
	cmd.AddCommand(tail)
	return cmd
}

// printRecord prints one record: a stable text line made safe for a
// terminal (its values come from the log; see termSanitize), or its
// envelope as one JSON line with its stream sequence.
func printRecord(w io.Writer, r events.Record, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(r.Envelope)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "{\"seq\":%d,\"event\":%s}\n", r.Seq, b)
		return err
	}
	_, err := io.WriteString(w, termSafe(fmt.Sprintf("%8d  %s  %-26s %s v%d  %s\n", r.Seq, r.At.Format(events.TimeFormat), r.Type, r.Agg, r.Ver, summary(r.Envelope))))
	return err
}

// summary is a short, stable description of an event's data.
func summary(e events.Envelope) string {
	switch d := e.Data.(type) {
	case events.SessionTransitioned:
		return fmt.Sprintf("%s→%s %s", d.From, d.To, d.Activity)
	case events.SessionEntryOpened:
		return fmt.Sprintf("%s %s [%s]", d.EntryID, d.Activity, d.Lane)
	case events.SessionEntryClosed:
		return fmt.Sprintf("%s %s", d.EntryID, d.Outcome)
	case events.SessionEntryAbandoned:
		return fmt.Sprintf("%s %s", d.EntryID, d.Reason)
	case events.SessionEnded:
		return d.Reason
	}
	if o, ok := events.Observed(e.Data); ok {
		s := o.Kind
		if o.Line > 0 {
			s = fmt.Sprintf("line %d %s", o.Line, o.Kind)
		}
		for _, sg := range o.Signals {
			s += " " + sg.Kind
		}
		return s
	}
	return ""
}
