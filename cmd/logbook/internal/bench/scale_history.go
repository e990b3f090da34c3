package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// ScaleHistory makes the decisions of a synthetic history of many
// sessions, for the scale rows of `logbook bench` and the tests of large
// answers: each decision is one aggregate's atomic batch, written straight
// into the log (AppendBatches), the way hooks and imports would have
// decided it.
type ScaleHistory struct {
	reg *events.Registry
	at  time.Time // time of every fact, UTC, microsecond precision
}

// NewScaleHistory returns a ScaleHistory whose events reg makes, all at
// one time: an hour before the call, to the second. Its sessions are
// recent whenever it runs, so `logbook sessions` lists its ended ones
// without --all (it leaves out those last active over a day ago).
func NewScaleHistory(reg *events.Registry) ScaleHistory {
	return ScaleHistory{reg: reg, at: time.Now().Add(-time.Hour).UTC().Truncate(time.Second)}
}

// ScaleSessionID returns the id of synthetic session i, UUID-shaped.
func ScaleSessionID(i int) string {
	return fmt.Sprintf("5ca1e000-0000-4000-8000-%012d", i)
}

// envelope returns p as event ver of agg, caused by a hook.
func (h ScaleHistory) envelope(agg events.Aggregate, ver uint64, p events.Payload) events.Envelope {
	ev := h.reg.New(p)
	ev.ID, ev.Agg, ev.Ver, ev.At = ulid.Make(), agg, ver, h.at
	ev.Cause = &events.Cause{Kind: "hook", Event: "SessionStart", Ref: ev.ID.String()}
	ev.Host, ev.Actor = "bench", "claude-code"
	return ev
}

// Session returns the decision that starts session id (a subagent of
// parent when parent is set), describes it with a title of title bytes,
// and moves it to phase: ready, working (one tool entry open) or ended.
// A finished imported session's row is about 600 bytes; so is this one's
// with a title of 200.
func (h ScaleHistory) Session(id, parent, phase string, title int) events.Batch {
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	b := events.Batch{Agg: agg}
	add := func(p events.Payload) {
		b.Events = append(b.Events, h.envelope(agg, uint64(len(b.Events)+1), p))
	}
	add(events.SessionStarted{Agent: "claude-code", AgentSessionID: id, Parent: parent, Cwd: "/home/user/app", Model: "claude-x", Mode: events.ModeWorkspaceWrite})
	add(events.SessionDescribed{GitBranch: "main", Version: "2.1.0", Title: strings.Repeat("t", title)})
	switch phase {
	case events.PhaseWorking:
		add(events.SessionTransitioned{From: events.PhaseReady, To: events.PhaseWorking, Activity: "tool:Bash", EntryID: "toolu_" + id})
		add(events.SessionEntryOpened{EntryID: "toolu_" + id, Activity: "tool:Bash", Lane: events.LaneMain})
	case events.PhaseEnded:
		add(events.SessionTransitioned{From: events.PhaseReady, To: events.PhaseEnded, Activity: "ended"})
	}
	return b
}

// Sessions returns the decisions of sessions n sessions from, ids
// ScaleSessionID(from) on: working ones of them working (spread over the
// range), the rest ended.
func (h ScaleHistory) Sessions(from, n, working int) []events.Batch {
	out := make([]events.Batch, 0, n)
	every := n + 1
	if working > 0 {
		every = max(n/working, 1)
	}
	for i := range n {
		phase := events.PhaseEnded
		if i%every == 0 && i/every < working {
			phase = events.PhaseWorking
		}
		out = append(out, h.Session(ScaleSessionID(from+i), "", phase, 200))
	}
	return out
}

// activity returns the decisions that append n activity changes to
// session id, whose last event is ver, in batches of events.MaxBatch.
func (h ScaleHistory) activity(id string, ver uint64, n int) []events.Batch {
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	var out []events.Batch
	for n > 0 {
		b := events.Batch{Agg: agg}
		for range min(n, events.MaxBatch) {
			ver++
			from, to := "thinking", "tool:Bash"
			if ver%2 == 0 {
				from, to = to, from
			}
			b.Events = append(b.Events, h.envelope(agg, ver, events.SessionActivityChanged{From: from, To: to}))
		}
		n -= len(b.Events)
		out = append(out, b)
	}
	return out
}

// Command returns the decision that requests command id for session,
// its argv holding about argv bytes.
func (h ScaleHistory) Command(id, session string, argv int) events.Batch {
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	return events.Batch{Agg: agg, Events: []events.Envelope{h.envelope(agg, 1, events.CommandRequested{
		Session: session, Argv: []string{"echo", strings.Repeat("a", argv)}, Workspace: "/home/user/app",
		Mode: events.ModeWorkspaceWrite, RequestedBy: "bench",
	})}}
}
