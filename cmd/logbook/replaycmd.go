package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

func replayCmd(g *globals) *cobra.Command {
	var (
		seq      uint64
		at       string
		sess     string
		verify   bool
		rederive bool
		dump     bool
	)
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Rebuild state from the log at any point; verify the live projection; re-derive decisions",
		Long: `replay folds the log into a fresh, in-memory projection and prints its state
hash and sessions: as of the end, or of a stream sequence (--seq) or a time
(--at), for the whole log or one session (--session). --at folds the
longest prefix (in stream order) whose events are all dated at or before
it: an event dated later ends it, though events after it may be dated
earlier (an older history imported after it, a clock set back), so the
state is the one --seq of the last
event folded gives; replay names the event that ended the prefix and
counts the later ones dated at or before the time, left out.

--verify compares the live projection's state hash with a fresh replay's up
to the live checkpoint and prints both (exit 1 when they differ), and walks
the whole stream for messages it lost (exit 1 naming them, equal or not).
--rederive runs today's session reducer over a session's stored
observations and reports the first one whose decisions differ from those
recorded, or an event whose cause names the reconciler that no stored tick
decided (exit 1 when any do).
--dump prints one line per record of the selected history.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := replayFlagsAlone(cmd); err != nil {
				return err
			}
			if verify {
				return natslog.NameUnavailable(replayVerify(ctx, g))
			}
			p := replay.Point{Seq: seq}
			if at != "" {
				t, err := time.Parse(time.RFC3339Nano, at)
				if err != nil {
					return usageErrorf("--at %q: want an RFC 3339 time such as 2026-11-30T10:00:00Z", at)
				}
				p.Time, p.TimeSet = t, true
			}
			if rederive && sess == "" {
				return usageErrorf("--rederive needs --session")
			}
			b, err := openBackend(ctx, g)
			if err != nil {
				return err
			}
			defer b.Close()
			b.fastPath(ctx)
			if seq > 0 {
				if err := replay.CheckSeq(ctx, b.log, seq); err != nil {
					if _, ok := errors.AsType[*replay.SeqError](err); ok {
						return usageErrorf("%w", err)
					}
					return err
				}
			}
			if sess != "" {
				if sess, err = resolveID(ctx, b, events.KindSession, sess); err != nil {
					return err
				}
				p.Agg = events.Aggregate{Kind: events.KindSession, ID: sess}
			}
			switch {
			case rederive:
				r, err := replay.Rederive(ctx, b.log, sess)
				if err != nil {
					return err
				}
				// The events of the session the log left out as
				// unattested: neither folded nor decided again.
				us := unattested(b.log, p.Agg.Subject())
				if err := emit(g, replay.NewRederiveReport(r, us), func(w io.Writer) error { return term.Rederivation(w, r, len(us)) }); err != nil {
					return err
				}
				if !r.Agree() {
					return &exitError{code: 1, err: fmt.Errorf("decisions diverge")}
				}
				if len(us) > 0 {
					g.shownUnattested = true
					if !g.json {
						term.Unattested(g.stdout, "  UNATTESTED: ", us)
					}
					return &exitError{code: 1, err: fmt.Errorf("session %s holds %s, left out of the fold", sess, term.Plural(len(us), "unattested event"))}
				}
				return nil
			case dump && g.json:
				for r, err := range replay.Records(ctx, b.log, p) {
					if err != nil {
						return err
					}
					if err := printRecord(g.stdout, r, true); err != nil {
						return err
					}
				}
				return nil
			case dump:
				return term.Print(g.stdout, func(w io.Writer) error { return replay.Dump(w, replay.Records(ctx, b.log, p)) })
			}
			st, err := replay.StateAt(ctx, b.log, p, sess)
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(g.stdout, st)
			}
			fmt.Fprintf(g.stdout, "replayed %s: seq %d, state hash %s\n", p, st.Seq, st.Hash)
			if c := st.Cut; c != nil {
				at := p.Time.UTC().Format(events.TimeFormat)
				fmt.Fprintf(g.stdout, "the prefix ends before seq %d, the first event dated after %s", c.Seq, at)
				if c.Left > 0 {
					fmt.Fprintf(g.stdout, "; %s after it dated at or before %s (the last at seq %d) left out: the log holds them after a later-dated event (an older history imported after it, or a clock set back)", term.Plural(c.Left, "event", "events"), at, c.Last)
					if sess == "" {
						fmt.Fprint(g.stdout, "; --session ID --at folds one session's own events, --seq N the log up to any event")
					}
				}
				fmt.Fprintln(g.stdout)
			}
			fmt.Fprintln(g.stdout)
			return term.Print(g.stdout, func(w io.Writer) error { return term.States(w, st.Sessions, time.Now()) })
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&seq, "seq", 0, "replay up to and including this stream sequence")
	f.StringVar(&at, "at", "", "replay up to the first event dated after this time (RFC 3339)")
	f.StringVar(&sess, "session", "", "replay only this session (an id or a unique prefix)")
	f.BoolVar(&verify, "verify", false, "compare the live projection with a fresh replay")
	f.BoolVar(&rederive, "rederive", false, "decide a session's observations again with today's reducer (needs --session)")
	f.BoolVar(&dump, "dump", false, "print one line per record instead")
	logWaitFlag(cmd, g)
	return cmd
}

// replayFlagsAlone refuses, as a usage error, a flag of replay the mode
// asked for would ignore: --verify compares the whole live projection,
// --rederive decides all of a session's observations, --wait bounds only
// --verify; and --seq 0, which names no sequence.
func replayFlagsAlone(cmd *cobra.Command) error {
	for _, m := range []struct {
		mode   string
		ignore []string
	}{
		{"verify", []string{"seq", "at", "session", "rederive", "dump"}},
		{"rederive", []string{"seq", "at", "dump"}},
	} {
		if !cmd.Flags().Changed(m.mode) {
			continue
		}
		for _, f := range m.ignore {
			if cmd.Flags().Changed(f) {
				return usageErrorf("--%s goes without --%s", m.mode, f)
			}
		}
	}
	// --wait bounds only --verify's wait for the log.
	if cmd.Flags().Changed("wait") && !cmd.Flags().Changed("verify") {
		return usageErrorf("--wait goes with --verify")
	}
	// The end of the log is the default; an explicit 0 is no sequence.
	if cmd.Flags().Changed("seq") {
		if v, err := cmd.Flags().GetUint64("seq"); err == nil && v == 0 {
			return usageErrorf("--seq 0: stream sequences begin at 1 (leave --seq out for the end of the log)")
		}
	}
	return nil
}

func replayVerify(ctx context.Context, g *globals) error {
	return withAPI(ctx, g, func(_ *backend, call api.Caller) error {
		var r replay.Report
		if err := call(ctx, api.VerbVerify, struct{}{}, &r); err != nil {
			return err
		}
		if g.json {
			if err := writeJSON(g.stdout, r); err != nil {
				return err
			}
		} else {
			term.VerifyReport(g.stdout, r)
		}
		if !r.Equal {
			return &exitError{code: 1, err: fmt.Errorf("live projection differs from the log")}
		}
		if r.Missing > 0 {
			return &exitError{code: 1, err: fmt.Errorf("the log is not whole: %s", r.MissingText)}
		}
		if n := len(r.Unattested); n > 0 {
			g.shownUnattested = true
			return &exitError{code: 1, err: fmt.Errorf("the log holds %s, left out of every fold", term.Plural(n, "unattested event"))}
		}
		if r.SignedUnjudged > 0 {
			return &exitError{code: 1, err: fmt.Errorf("the log is signed since seq %d and was read unjudged: pin its admin key (`logbook keys pin`)", r.SignedUnjudged)}
		}
		return nil
	})
}
