package term

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// Record writes one record as a stable text line (`events tail`,
// `replay --dump`): sequence, time, type, aggregate, version and Summary,
// each value from the log passed through Field, so the line stays one
// line whatever it holds. Errors are w's.
func Record(w io.Writer, r events.Record) error {
	_, err := fmt.Fprintf(w, "%8d  %s  %-26s %s v%d  %s\n", r.Seq, r.At.Format(events.TimeFormat), Field(r.Type), Field(r.Agg.String()), r.Ver, Field(Summary(r.Envelope)))
	return err
}

// Summary is a short, stable description of an event's data: a
// transition's phases and activity, an entry's id and outcome, an
// observation's line, kind and signals; "" for other events. Its text is
// the log's, not yet made safe for a terminal.
func Summary(e events.Envelope) string {
	switch d := e.Data.(type) {
	case events.SessionTransitioned:
		return fmt.Sprintf("%s→%s %s", d.From, d.To, d.Activity)
	case events.SessionEntryOpened:
		return fmt.Sprintf("%s %s [%s]", d.EntryID, d.Activity, d.Lane) + moveSummary(d.Moves)
	case events.SessionEntryClosed:
		return fmt.Sprintf("%s %s", d.EntryID, d.Outcome) + moveSummary(d.Moves)
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

// moveSummary is " from→to activity" for the phase move an entry event
// carries (events.TransitionOf), "" for none.
func moveSummary(mv *events.SessionTransitioned) string {
	if mv == nil {
		return ""
	}
	return fmt.Sprintf(" %s→%s %s", mv.From, mv.To, mv.Activity)
}

// Rederivation writes what `replay --rederive` found, as text, for a
// session of which the log left out unattested events (quarantined:
// neither folded nor decided again; the caller names them after): the
// log agrees only when r does and unattested is 0. Its values come from
// the log: write it through Print.
func Rederivation(w io.Writer, r replay.Rederivation, unattested int) error {
	if r.Agree() && unattested > 0 {
		_, err := fmt.Fprintf(w, "session %s: %d observations decided again and decide as recorded, but the log holds %s of the session, left out of the fold and decided by none:\n",
			Field(r.Session), r.Observations, Plural(unattested, "unattested event", "unattested events"))
		return err
	}
	if r.Agree() {
		_, err := fmt.Fprintf(w, "session %s: %d observations decided again, all agree with the log\n", Field(r.Session), r.Observations)
		return err
	}
	if d := r.First; d.Undecided != "" {
		fmt.Fprintf(w, "session %s: %d of %d observations decide differently today, or an event claims a decision none made; first at seq %d (%s), decided by no observation: %s\n",
			Field(r.Session), r.Diverged, r.Observations, d.Seq, Field(d.Recorded[0].Type), Field(d.Undecided))
	} else {
		fmt.Fprintf(w, "session %s: %d of %d observations decide differently today; first at seq %d (%s), event %d:\n",
			Field(r.Session), r.Diverged, r.Observations, d.ObsSeq, Field(d.Obs.Type), d.Index)
	}
	for _, e := range r.First.Recorded {
		fmt.Fprintf(w, "  recorded:  %s %s\n", Field(e.Type), Field(Summary(e)))
	}
	for _, e := range r.First.Rederived {
		fmt.Fprintf(w, "  rederived: %s %s\n", Field(e.Type), Field(Summary(e)))
	}
	var err error
	if r.First.Refused != "" {
		_, err = fmt.Fprintf(w, "  refused today: %s\n", Field(r.First.Refused))
	}
	return err
}

// Unattested writes one line per event the log left out as unattested,
// each prefixed by prefix ("UNATTESTED: ", "  UNATTESTED: ").
func Unattested(w io.Writer, prefix string, us []replay.Unattested) {
	for _, u := range us {
		fmt.Fprintf(w, "%s%s\n", prefix, Field(u.String()))
	}
}

// VerifyReport writes what `replay --verify` found: the live and replayed
// state hashes, "equal" or what differs, and the unattested events.
func VerifyReport(w io.Writer, r replay.Report) {
	fmt.Fprintf(w, "live projection at seq %d: %s\nfresh replay to seq %d: %s\n", r.Seq, r.LiveHash, r.Seq, r.ReplayHash)
	if r.Equal {
		fmt.Fprintln(w, "equal")
	} else {
		fmt.Fprintf(w, "DIFFERENT: %s\n", r)
	}
	if r.Missing > 0 {
		fmt.Fprintf(w, "MISSING: %s (a fold passes over a lost message, the replay's as the live one's: equal hashes do not show it; run `logbook verify`)\n", r.MissingText)
	}
	Unattested(w, "UNATTESTED: ", r.Unattested)
	if r.SignedUnjudged > 0 {
		fmt.Fprintln(w, Unjudged(r.SignedUnjudged))
	}
}

// Unjudged is the line that says a signed log was read unjudged: its
// signing.began is at stream sequence seq and this host pins no admin
// key, so it folds what every host that pins the key leaves out.
func Unjudged(seq uint64) string {
	return fmt.Sprintf("NOT JUDGED: the log is signed since seq %d (signing.began) and this host pins no admin key: "+
		"it folds what every host that pins the key quarantines (unsigned, forged, out-of-role events), "+
		"so its state may differ from theirs at the same sequence; pin the log's admin key with "+
		"`logbook keys pin PUBLIC` (`logbook keys admin` prints it where the key was made)", seq)
}

// PrintAudit writes an audit timeline to w, byte for byte as Print of
// Audit writes it: replay.WriteText shows every field through
// replay.Escape, which escapes whatever Sanitize would (controls,
// escape sequences, C1, bidirectional overrides and isolates, bytes that
// are not UTF-8) and more, so its text passes Sanitize unchanged, and
// under a width of 40 (a pipe, a file) PrintAudit writes it without
// passing it through Sanitize again: in an audit of 20,000 events that
// pass took as long as laying the text out. At 40 and over it is Print
// of Audit. Errors are w's.
func PrintAudit(w io.Writer, items []replay.Item, width int) error {
	if width >= 40 {
		return Print(w, func(w io.Writer) error { return Audit(w, items, width) })
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	return Flushed(replay.WriteText(bw, items), bw)
}

// Audit writes an audit timeline (replay.WriteText) wrapped to width
// terminal columns (Wrap); a width under 40 (or 0: not a terminal) leaves
// its lines whole. Write it through Print.
func Audit(w io.Writer, items []replay.Item, width int) error {
	if width < 40 {
		return replay.WriteText(w, items)
	}
	var b strings.Builder
	if err := replay.WriteText(&b, items); err != nil {
		return err
	}
	_, err := io.WriteString(w, Wrap(b.String(), width))
	return err
}
