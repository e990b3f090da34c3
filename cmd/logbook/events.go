package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/term"
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
			if cmd.Flags().Changed("from") && from == 0 {
				// As replay --seq 0: no sequence, not the default's last events.
				return usageErrorf("--from 0: stream sequences begin at 1 (leave --from out for the last --lines events)")
			}
			// --lines with --from counts the events printed from there
			// (as head does), never ignored; a follow has no count.
			limit := uint64(0)
			if !cmd.Flags().Changed("from") && n == 0 && !follow {
				return usageErrorf("--lines 0: nothing to print (with --follow, only the events that come are)")
			}
			if cmd.Flags().Changed("from") && cmd.Flags().Changed("lines") {
				if follow {
					return usageErrorf("--lines goes without --follow when --from is given: a follow from --from %d prints every event from there on", from)
				}
				if n == 0 {
					return usageErrorf("--lines 0 with --from %d: nothing to print", from)
				}
				limit = n
			}
			ctx := cmd.Context()
			g.follows = follow
			var b *backend
			var err error
			if follow {
				b, err = openFollower(ctx, g, false)
			} else {
				b, err = openBackend(ctx, g)
			}
			if err != nil {
				if follow && ctx.Err() != nil {
					return stopErr(ctx)
				}
				return err
			}
			last, err := b.log.LastSeq(ctx)
			if err != nil {
				b.Close()
				return err
			}
			if from > last && !follow {
				b.Close()
				if last == 0 {
					return usageErrorf("--from %d: the log is empty (--follow waits for it)", from)
				}
				return usageErrorf("--from %d: past the log's last event sequence %d (--follow waits for it)", from, last)
			}
			start := from
			if start == 0 {
				// The stream holds commands' output beside the events:
				// the last n events may lie further back than n messages.
				if start, err = lastEventsStart(ctx, b, last, n); err != nil {
					b.Close()
					return err
				}
			}
			if follow {
				return followLog(ctx, g, b, start)
			}
			defer b.Close()
			printed := uint64(0)
			for r, err := range b.log.Read(ctx, start) {
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				if err := printRecord(g.stdout, r, g.json); err != nil {
					return err
				}
				if printed++; printed == limit {
					break
				}
			}
			return nil
		},
	}
	tail.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events until interrupted")
	tail.Flags().Uint64VarP(&n, "lines", "n", 20, "how many of the last events to print; with --from, how many to print from there, every one when --lines is not given")
	tail.Flags().Uint64Var(&from, "from", 0, "start at this stream sequence (1 or more) instead; past the log's last one is a usage error, unless --follow waits for it")
	cmd.AddCommand(tail)
	return cmd
}

// printRecord prints one record: a stable text line (term.Record), or
// its envelope as one JSON line with its stream sequence.
func printRecord(w io.Writer, r events.Record, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(r.Envelope)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "{\"seq\":%d,\"event\":%s}\n", r.Seq, b)
		return err
	}
	return term.Record(w, r)
}

// emit writes v as indented JSON with --json, else text through
// term.Print: the two faces of a read command's answer. Errors are
// stdout's and text's.
func emit(g *globals, v any, text func(io.Writer) error) error {
	if g.json {
		return writeJSON(g.stdout, v)
	}
	return term.Print(g.stdout, text)
}

// answer writes v as indented JSON with --json, else the line format
// makes of args: the answer of a command that changes something.
// Errors are stdout's.
func answer(g *globals, v any, format string, args ...any) error {
	if g.json {
		return writeJSON(g.stdout, v)
	}
	_, err := fmt.Fprintf(g.stdout, format, args...)
	return err
}

// errReopen ends one stretch of followLog's reading: the follower gave
// the data dir up to a writer, or the server it read through stopped.
var errReopen = errors.New("follow: reopen")

// followLog prints the log's events from sequence next on, as they are
// appended, until ctx ends (then it returns stopErr's error). It starts on b and
// closes every backend it opens. Holding the data dir itself (no server
// runs), it gives the data dir's lock up as soon as a writer asks for it
// (serve starting, an import: see datadir.Dir.LockOver) and goes on through the
// server once it answers, or directly once the writer is done; reading
// through a server that stops, it goes on directly. No event is printed
// twice or left out across such a change, and each change is said on
// stderr. Other errors (a log it cannot read, stdout closed) end it.
func followLog(ctx context.Context, g *globals, b *backend, next uint64) error {
	for {
		err := followStretch(ctx, g, b, &next)
		if ctx.Err() != nil {
			return stopErr(ctx)
		}
		if !errors.Is(err, errReopen) {
			return err
		}
		if b, err = openFollower(ctx, g, true); err != nil {
			if ctx.Err() != nil {
				return stopErr(ctx)
			}
			return err
		}
	}
}

// followStretch prints, on b, the events from *next on until ctx ends, a
// writer asks for the data dir b holds, or the server b reads through
// stops (both errReopen), advancing *next past each one printed. It
// closes b.
func followStretch(ctx context.Context, g *globals, b *backend, next *uint64) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var asked atomic.Bool
	var watched <-chan struct{}
	if b.remote {
		done := make(chan struct{})
		close(done)
		watched = done
	} else {
		watched = b.dd.dir().WatchHandover(fctx, func() { asked.Store(true); cancel() })
	}
	var ferr error
	for r, err := range b.log.Follow(fctx, *next) {
		if err != nil {
			ferr = err
			break
		}
		if err := printRecord(g.stdout, r, g.json); err != nil {
			ferr = err
			break
		}
		*next = r.Seq + 1
	}
	cancel()
	<-watched
	lost := b.remote && !b.nc.IsConnected()
	b.Close()
	switch {
	case ctx.Err() != nil:
		return nil
	case asked.Load():
		fmt.Fprintf(g.stderr, "%s: gave the data dir up to a command that asked for it\n", g.cmdName)
		return errReopen
	case lost:
		fmt.Fprintf(g.stderr, "%s: the server stopped\n", g.cmdName)
		return errReopen
	case ferr != nil:
		return ferr
	}
	return fmt.Errorf("follow from %d: the log's reader ended", *next)
}

// openFollower opens a backend for a follower: through the server when
// one answers, else on the data dir directly; while a writer holds the
// data dir or asks for it, it waits (saying once for whom on stderr)
// until ctx ends, which it returns. It says which way it reads when it
// waited or moved (the follower left another backend). Other errors of
// openBackend are returned at once.
func openFollower(ctx context.Context, g *globals, moved bool) (*backend, error) {
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return nil, err
	}
	said := false
	for {
		if !dd.dir().HandoverWanted() {
			b, err := openBackend(ctx, g)
			switch {
			case err == nil:
				if moved || said {
					how := "the data dir directly"
					if b.remote {
						how = "the server"
						if si, ok := dd.readServeInfo(); ok {
							how = fmt.Sprintf("logbook serve pid %d", si.PID)
						}
					}
					fmt.Fprintf(g.stderr, "%s: following through %s\n", g.cmdName, how)
				}
				return b, nil
			case !errors.Is(err, datadir.ErrBusy):
				return nil, err
			case !said:
				msg := err.Error()
				if i := strings.Index(msg, "; "); i > 0 {
					msg = msg[:i]
				}
				fmt.Fprintf(g.stderr, "%s: %s: waiting\n", g.cmdName, msg)
				said = true
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(4 * datadir.HandoverPoll):
		}
	}
}

// lastEventsStart returns the stream sequence from which the log's last n
// events are read (1 when it holds fewer, last+1 for none): it reads back from last, the
// stream's last sequence, over a window of n messages, widened fourfold
// until the window holds n events or reaches the stream's start, since
// messages of commands' output lie between the events.
func lastEventsStart(ctx context.Context, b *backend, last, n uint64) (uint64, error) {
	if n == 0 {
		return last + 1, nil // none of those stored: a follow's from the next
	}
	if last == 0 {
		return 1, nil
	}
	for window := n; ; window *= 4 {
		start := uint64(1)
		if last > window {
			start = last - window + 1
		}
		var seqs []uint64 // the window's event sequences, the last n of them
		for r, err := range b.log.Read(ctx, start) {
			if err != nil {
				return 0, err
			}
			if r.Seq > last {
				break
			}
			if seqs = append(seqs, r.Seq); uint64(len(seqs)) > n {
				seqs = seqs[1:]
			}
		}
		if uint64(len(seqs)) == n {
			return seqs[0], nil
		}
		if start == 1 {
			return 1, nil
		}
	}
}
