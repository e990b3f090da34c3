package session_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"pgregory.net/rapid"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// clockChecks is how many histories TestInvariants_Clock draws unless
// -rapid.checks or RAPID_CHECKS says otherwise.
const clockChecks = 1000

// The reconciler's settings in TestInvariants_Clock.
const (
	clockAfter = 30 * time.Minute
	clockQuiet = 2 * time.Second
)

// clockFolder is a folder whose observations carry the times the ingest
// gives them (a receipt on the server's clock, the agent's own
// timestamp on a line, liveness) and between which reconciler ticks run.
type clockFolder struct {
	*folder
	now      time.Time     // the server's clock
	skew     time.Duration // the transcript source's clock minus the server's
	lastLive time.Time     // the receipt of the last live observation
	lastRecv time.Time     // the receipt of the last observation of any kind
	dated    map[string]time.Time
	ticks    int
	marks    int
}

// deliverAt delivers r, received at c.now; a line written by the agent
// at written (server clock) carries its agent time, written plus the
// source's skew, and is dated as the adapter dates it (its agent time,
// bounded at its receipt, events.BoundTime).
func (c *clockFolder) deliverAt(r report, written time.Time, live bool) {
	f := c.folder
	recv := c.now
	o := events.Observation{Key: r.key, Parser: "test/1", Kind: "hook", Signals: r.sigs, Meta: events.Meta{SessionID: "s1"}, Received: recv, Live: true}
	var p events.Payload
	at := recv
	if r.line {
		f.lines++
		agent := written.Add(c.skew)
		o.Key, o.Line, o.Path, o.Kind = "line:"+strconv.Itoa(f.lines), f.lines, "/p/s1.jsonl", "assistant"
		o.AgentTime, o.Live = agent.UTC().Format(time.RFC3339Nano), live
		at, _ = events.BoundTime(agent, recv)
		p = events.ClaudeLineObserved{Observation: o}
	} else {
		f.sent = append(f.sent, r)
		p = events.ClaudeHookObserved{Observation: o}
	}
	before := f.s.Ver
	f.observe(p, at)
	if f.s.Ver == before {
		// Seen already: nothing is stored, so the log holds no receipt
		// of it (a hook repeating a line read before).
		return
	}
	if f.s.ObservedRef != "" {
		c.dated[f.s.ObservedRef] = f.s.ObservedAt
	}
	c.lastRecv = recv
	if o.Live {
		c.lastLive = recv
	}
}

// tick runs the reconciler at c.now as claude.Ingester.Reconcile does
// (no agent process known), and checks its marks: never while live
// observations keep arriving or within the quiet period after any, never
// on a wait for a person, and every mark's evidence resolves to stored
// observations.
func (c *clockFolder) tick() {
	f := c.folder
	s := f.s
	if !s.Exists() || s.Phase == events.PhaseEnded {
		return
	}
	c.ticks++
	tk := &events.Tick{
		Now: c.now, LastObserved: s.ObservedAt, LastRef: s.ObservedRef, LastReceived: s.ReceivedAt,
		AbandonAfter: clockAfter.Milliseconds(), QuietMS: clockQuiet.Milliseconds(), ClockOffsetMS: s.ClockOffsetMS,
	}
	f.n++
	e := f.reg.New(events.TickObserved{Observation: events.Observation{Key: "tick:" + strconv.Itoa(f.n), Parser: "logbook-reconciler/1", Kind: "tick", Tick: tk}})
	e.ID = ulid.MustNew(ulid.Timestamp(c.now), strings.NewReader(fmt.Sprintf("%016d", f.n)))
	e.Agg, e.At = agg, c.now
	decs, err := session.Decide(s, session.Observe{Obs: e})
	if err != nil {
		f.t.Fatalf("decide tick: %v", err)
	}
	if os.Getenv("INV_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "tick now %s observed %s recv %s phase %s/%s turn %v -> %d\n", c.now.Format(time.RFC3339), s.ObservedAt.Format(time.RFC3339), s.ReceivedAt.Format(time.RFC3339), s.Phase, s.Activity, s.TurnOpen, len(decs))
	}
	if len(decs) == 0 {
		return
	}
	c.marks++
	if what, since, waits := s.PersonWait(); waits {
		f.t.Fatalf("tick at %s marked %s on a wait for a person (%s since %s)", c.now, typesOf(decs), what, since)
	}
	if idle := c.now.Sub(c.lastLive); !c.lastLive.IsZero() && idle < clockAfter {
		f.t.Fatalf("tick at %s marked %s %s after a live observation (abandon after %s; skew %s)", c.now, typesOf(decs), idle, clockAfter, c.skew)
	}
	if quiet := c.now.Sub(c.lastRecv); quiet < clockQuiet {
		f.t.Fatalf("tick at %s marked %s %s after an observation was taken in (quiet period %s)", c.now, typesOf(decs), quiet, clockQuiet)
	}
	if tk.LastRef == "" || !f.obs[tk.LastRef] {
		f.t.Fatalf("tick evidence last_ref %q is no stored observation", tk.LastRef)
	}
	if at, ok := c.dated[tk.LastRef]; !ok || !at.Equal(tk.LastObserved) {
		f.t.Fatalf("tick evidence: last observed %s, but observation %s is dated %s", tk.LastObserved, tk.LastRef, at)
	}
	f.apply(e)
	f.obs[e.ID.String()] = true
	for _, d := range decs {
		if d.Cause == nil || d.Cause.Ref != e.ID.String() || !f.obs[d.Cause.Ref] {
			f.t.Fatalf("%s has cause %+v, not the stored tick", d.Type, d.Cause)
		}
		f.apply(d)
	}
	f.always()
}

// pause lets the server's clock run for d with ticks at random moments.
func (c *clockFolder) pause(t *rapid.T, d time.Duration, label string) {
	end := c.now.Add(d)
	for range rapid.IntRange(0, 3).Draw(t, label+"Ticks") {
		// rapid draws small numbers first: the moment is a picked share
		// of what is left of the pause, the end first.
		share := rapid.SampledFrom([]int64{4, 3, 2, 1, 0}).Draw(t, label+"At")
		c.now = c.now.Add(time.Duration(int64(end.Sub(c.now)) * share / 4))
		c.tick()
	}
	c.now = end
	if rapid.Bool().Draw(t, label+"TickAtEnd") {
		c.tick() // rapid draws small numbers first: a tick at the very end too
	}
}

func typesOf(es []events.Envelope) string {
	var ts []string
	for _, e := range es {
		ts = append(ts, e.Type)
	}
	return strings.Join(ts, ",")
}

// TestInvariants_Clock draws the histories of TestInvariants (hooks and a
// transcript, interleaved) with the transcript's agent clock skewed
// between -2h and +2h against the server's, some of the first lines read
// as history (an import of lines written up to three days before, read
// while the reconciler runs), pauses of up to 25 minutes while the agent
// works and of up to a week while the session waits on a person, and
// reconciler ticks at random moments; with or without hooks, the agent
// vanishing at any point. Hooks are dated by their receipt
// on the appending host, which is the server's clock. It checks that no
// stale mark comes while live observations keep arriving (within the
// abandon-after time of the last one stored; a report that only repeats
// what the log holds is not stored) or within the quiet period after any
// observation, none on a wait for a person, and that every mark's
// evidence (its tick) resolves to stored observations.
func TestInvariants_Clock(t *testing.T) {
	defaultChecks(t, clockChecks)
	waits, marked := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		c := &clockFolder{
			folder: &folder{t: t, reg: events.NewRegistry(), s: session.Init(agg), obs: map[string]bool{}},
			now:    time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
			skew:   rapid.SampledFrom([]time.Duration{-2 * time.Hour, -40 * time.Minute, -time.Second, 0, time.Second, 40 * time.Minute, 2 * time.Hour}).Draw(t, "skew"),
			dated:  map[string]time.Time{},
		}
		// Anywhere in [-2h, +2h], the ends and the defaults' neighbours
		// first (rapid draws small numbers first).
		c.skew += time.Duration(rapid.Int64Range(-int64(time.Minute), int64(time.Minute)).Draw(t, "skewMore"))
		c.skew = min(max(c.skew, -2*time.Hour), 2*time.Hour)
		turns := drawTurns(t)
		nLines := 0
		for _, ts := range turns {
			nLines += len(ts.lines)
		}
		// The first history lines were written before the server read
		// them, as one import: written from backlog ago, read now.
		history := rapid.IntRange(0, nLines).Draw(t, "historyLines")
		backlog := rapid.SampledFrom([]time.Duration{0, time.Minute, time.Hour, 72 * time.Hour}).Draw(t, "backlog")
		written := c.now.Add(-backlog)
		read := 0
		// Hooks may not be installed (the transcript alone, followed by
		// serve --watch); the agent may vanish at any point, its process
		// unknown, and then marks may come.
		hooks := rapid.Bool().Draw(t, "hooks")
		total := nLines
		for _, ts := range turns {
			total += len(ts.hooks)
		}
		vanish := rapid.IntRange(0, 2*total).Draw(t, "vanishAfter")
		delivered := 0
	turns:
		for k, ts := range turns {
			hi, li := 0, 0
			if !hooks {
				hi = len(ts.hooks)
			}
			for hi < len(ts.hooks) || li < len(ts.lines) {
				if delivered++; delivered > vanish && vanish < total {
					break turns
				}
				fromHook := li == len(ts.lines) || hi < len(ts.hooks) && rapid.Bool().Draw(t, fmt.Sprintf("hookFirst%d", k))
				if !fromHook && read < history {
					// Import in progress: lines come milliseconds apart.
					c.pause(t, time.Duration(rapid.IntRange(1, 200).Draw(t, "importGap"))*time.Millisecond, "import")
					written = written.Add(time.Duration(rapid.IntRange(2, 2000).Draw(t, "writeGap")) * time.Millisecond)
					if written.After(c.now) {
						written = c.now
					}
					c.deliverAt(ts.lines[li], written, false)
					li++
					read++
					continue
				}
				// Live: the agent works, sometimes for minutes; a wait
				// for a person may last a week.
				gap := time.Duration(rapid.IntRange(2, 2000).Draw(t, "gap")) * time.Millisecond
				switch _, _, waiting := c.s.PersonWait(); {
				case waiting && rapid.Bool().Draw(t, "personWait"):
					waits++
					gap = rapid.SampledFrom([]time.Duration{time.Minute, clockAfter, 5 * time.Hour, 7 * 24 * time.Hour}).Draw(t, "personGap")
				case rapid.IntRange(0, 4).Draw(t, "long") == 0:
					// rapid draws small numbers first: the lengths are
					// picked, then varied.
					gap = rapid.SampledFrom([]time.Duration{5 * time.Second, time.Minute, 10 * time.Minute, 24 * time.Minute}).Draw(t, "workGap")
					gap += time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "workGapMore"))
				}
				c.pause(t, gap, "live")
				if fromHook {
					c.deliverAt(ts.hooks[hi], c.now, true)
					hi++
				} else {
					c.deliverAt(ts.lines[li], c.now.Add(-time.Duration(rapid.IntRange(0, 50).Draw(t, "readLag"))*time.Millisecond), true)
					li++
					read++
				}
			}
			// The person may be away a week before the next turn.
			if _, _, waiting := c.s.PersonWait(); waiting {
				waits++
				c.pause(t, rapid.SampledFrom([]time.Duration{time.Minute, clockAfter, 5 * time.Hour, 7 * 24 * time.Hour}).Draw(t, "awayGap"), "away")
			}
		}
		// Then the agent falls silent for good: on a person-side wait
		// nothing is ever marked; otherwise marks may come.
		endGap := rapid.SampledFrom([]time.Duration{time.Second, 10 * time.Minute, clockAfter, 3 * time.Hour, 7 * 24 * time.Hour}).Draw(t, "endGap")
		c.pause(t, endGap+time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "endGapMore")), "end")
		c.tick()
		if c.marks > 0 {
			marked++
		}
		if os.Getenv("INV_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "end: phase %s entries %d ticks %d marks %d vanish %d/%d\n", c.s.Phase, len(c.s.Entries), c.ticks, c.marks, vanish, total)
		}
	})
	t.Logf("person-side waits drawn: %d, histories with a stale mark: %d", waits, marked)
}
