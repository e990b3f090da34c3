package session_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// receiptChecks is how many histories TestInvariants_NoTimePastReceipt
// draws unless -rapid.checks or RAPID_CHECKS says otherwise.
const receiptChecks = 600

// receiptFolder is a folder whose observations are dated as the ingest
// dates them: a hook and a live line at their receipt, a history line at
// its agent time bounded at its receipt (events.BoundTime), and a line
// with no time of its own (one that does not parse, a blank one) at the
// time of the line before it in its pass, or, first in a pass, at a time
// the session already holds (when the agent was last heard from, on the
// server's clock, or that time on the agent's clock).
type receiptFolder struct {
	*folder
	now     time.Time     // the server's clock: every receipt
	skew    time.Duration // the agent's clock minus the server's
	written time.Time     // when the agent wrote its last line (server clock)
	history bool          // a pass of an import is under way
	last    time.Time     // the time of the pass's last line
	maxRecv time.Time     // the latest receipt stored
}

// line delivers transcript line r (dated) or, with r nil, a line with no
// time and no signals, read live or by the pass under way.
func (c *receiptFolder) line(t *rapid.T, r *report) {
	f := c.folder
	f.lines++
	o := events.Observation{
		Key: "line:" + strconv.Itoa(f.lines), Parser: "test/1", Line: f.lines, Path: "/p/s1.jsonl", Kind: "invalid",
		Meta: events.Meta{SessionID: "s1"}, Received: c.now, Live: !c.history,
	}
	at := c.now
	if r != nil {
		o.Kind, o.Signals = "assistant", r.sigs
		o.AgentTime = c.written.Add(c.skew).UTC().Format(time.RFC3339Nano)
		if c.history {
			at, _ = events.BoundTime(c.written.Add(c.skew), c.now)
		}
	} else {
		o.Problems = []string{"line does not parse"}
		if c.history {
			at = c.last
			if at.IsZero() {
				s := f.s
				switch rapid.IntRange(0, 2).Draw(t, "passStart") {
				case 0:
					at = s.ObservedAt
				case 1:
					at = s.ObservedAt
					if !s.ClockOffsetAt.IsZero() {
						at = at.Add(-time.Duration(s.ClockOffsetMS) * time.Millisecond)
					}
				case 2:
					at = s.UpdatedAt
				}
			}
			if at.IsZero() {
				at = c.now
			}
			at, _ = events.BoundTime(at, c.now)
		}
	}
	if c.history {
		c.last = at
	}
	c.observe(events.ClaudeLineObserved{Observation: o}, at)
}

// observe stores p dated at and checks that no time the session holds
// lies past the latest receipt stored.
func (c *receiptFolder) observe(p events.Payload, at time.Time) {
	f := c.folder
	before := f.s.Ver
	f.observe(p, at)
	if f.s.Ver == before {
		return
	}
	if o, _ := events.Observed(p); o.Received.After(c.maxRecv) {
		c.maxRecv = o.Received
	}
	s := f.s
	for _, tm := range []struct {
		name string
		at   time.Time
	}{
		{"observed", s.ObservedAt}, {"received", s.ReceivedAt}, {"updated", s.UpdatedAt}, {"started", s.StartedAt},
		{"since", s.Since}, {"turn started", s.TurnStartedAt}, {"turn ended", s.TurnEndedAt}, {"clock offset learned", s.ClockOffsetAt},
	} {
		if tm.at.After(c.maxRecv) {
			f.t.Fatalf("%s %s lies past the latest receipt %s (agent clock %s off; offset learned %d ms)", tm.name, tm.at.Format(time.RFC3339Nano), c.maxRecv.Format(time.RFC3339Nano), c.skew, s.ClockOffsetMS)
		}
	}
	if la := session.Summarize(s).LastActivity(); la.After(c.maxRecv) {
		f.t.Fatalf("last activity %s lies past the latest receipt %s", la, c.maxRecv)
	}
}

// TestInvariants_NoTimePastReceipt draws the sessions of TestInvariants,
// their hooks and transcript lines interleaved, the lines read live or by
// imports that start and stop anywhere (an import going on after lines
// read live, as serve following a folder and an import of it do), with
// lines that have no time of their own anywhere among them, the agent's
// clock months behind or ahead of the server's and jumping forward while
// the session runs. Whatever the mix, no time the session holds (when
// the agent was last heard from, the times of its turns and phases, the
// offset's learning) lies past the latest receipt of an observation:
// nothing was heard of the agent after the report of it came in.
func TestInvariants_NoTimePastReceipt(t *testing.T) {
	defaultChecks(t, receiptChecks)
	rapid.Check(t, func(t *rapid.T) {
		const months = 5222 * time.Hour
		c := &receiptFolder{
			folder: &folder{t: t, reg: events.NewRegistry(), s: session.Init(agg), obs: map[string]bool{}},
			now:    time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC),
			skew:   rapid.SampledFrom([]time.Duration{-months, 0, -40 * time.Minute, 2 * time.Hour, months}).Draw(t, "skew"),
		}
		c.written = c.now.Add(-rapid.SampledFrom([]time.Duration{0, time.Hour, 72 * time.Hour}).Draw(t, "backlog"))
		for k, ts := range drawTurns(t) {
			hi, li := 0, 0
			for hi < len(ts.hooks) || li < len(ts.lines) {
				c.now = c.now.Add(rapid.SampledFrom([]time.Duration{time.Millisecond, time.Second, time.Minute, time.Hour}).Draw(t, "gap"))
				if c.written = c.written.Add(time.Duration(rapid.IntRange(1, 2000).Draw(t, "writeGap")) * time.Millisecond); c.written.After(c.now) {
					c.written = c.now
				}
				switch rapid.IntRange(0, 5).Draw(t, "what") {
				case 0: // an import starts or stops
					c.history, c.last = !c.history, time.Time{}
				case 1: // a line with no time of its own
					c.line(t, nil)
				case 2: // the agent's clock jumps forward
					c.skew += rapid.SampledFrom([]time.Duration{time.Minute, 2 * time.Hour, 30 * 24 * time.Hour}).Draw(t, "jump")
				}
				if li == len(ts.lines) || hi < len(ts.hooks) && rapid.Bool().Draw(t, fmt.Sprintf("hookFirst%d", k)) {
					r := ts.hooks[hi]
					hi++
					o := events.Observation{Key: r.key, Parser: "test/1", Kind: "hook", Signals: r.sigs, Meta: events.Meta{SessionID: "s1"}, Received: c.now, Live: true}
					c.observe(events.ClaudeHookObserved{Observation: o}, c.now)
					continue
				}
				c.line(t, &ts.lines[li])
				li++
			}
		}
	})
}
