package replay_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// appender appends one event at a time, each aggregate's versions dense.
type appender struct {
	t    *testing.T
	log  events.Log
	reg  *events.Registry
	ver  map[events.Aggregate]uint64
	last map[events.Aggregate]uint64
	at   time.Time
}

func (a *appender) add(agg events.Aggregate, p events.Payload) {
	a.t.Helper()
	e := a.reg.New(p)
	e.ID, e.Agg, e.Ver = ulid.Make(), agg, a.ver[agg]+1
	a.at = a.at.Add(time.Second)
	e.At = a.at
	e.Cause = &events.Cause{Kind: "worker", Event: "test", Ref: "r"}
	ap, err := a.log.Append(context.Background(), events.Batch{Agg: agg, Expect: a.last[agg], Events: []events.Envelope{e}})
	if err != nil {
		a.t.Fatalf("append %s %s: %v", agg, e.Type, err)
	}
	a.ver[agg], a.last[agg] = e.Ver, ap.Last
}

func TestSessionTimeline_Commands(t *testing.T) {
	log := newLog(t)
	a := &appender{t: t, log: log, reg: events.NewRegistry(), ver: map[events.Aggregate]uint64{}, last: map[events.Aggregate]uint64{},
		at: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	sess := events.Aggregate{Kind: events.KindSession, ID: "s1"}
	ran := events.Aggregate{Kind: events.KindCommand, ID: "c1"}
	refused := events.Aggregate{Kind: events.KindCommand, ID: "c2"}
	other := events.Aggregate{Kind: events.KindCommand, ID: "c3"}
	a.add(sess, events.SessionStarted{Agent: "cli"})
	a.add(ran, events.CommandRequested{Session: "s1", Argv: []string{"/bin/sh", "-c", "echo hi there"}, Workspace: "/w", Mode: events.ModeReadOnly, RequestedBy: "u"})
	a.add(refused, events.CommandRequested{Session: "s1", Argv: []string{"nope"}, Workspace: "/w", Mode: events.ModeFullAccess, RequestedBy: "u"})
	a.add(other, events.CommandRequested{Session: "s2", Argv: []string{"true"}, Workspace: "/w", Mode: events.ModeFullAccess, RequestedBy: "u"})
	a.add(ran, events.CommandStarted{Worker: "w1", Host: "h", Pid: 42})
	a.add(sess, events.SessionEntryOpened{EntryID: "cmd-c1", Activity: "command:sh", Lane: events.LaneBackground})
	a.add(refused, events.CommandRefused{Reason: "not found: nope"})
	a.add(ran, events.CommandExited{Code: 3, DurationMS: 7, OutputBytes: 9})
	a.add(sess, events.SessionEntryClosed{EntryID: "cmd-c1", Outcome: "exit 3"})

	// c1 is found through the session's entry, c2 only through the list.
	items, err := replay.SessionTimeline(context.Background(), log, "s1", []string{"c2"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := replay.WriteText(&b, items); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		`command.requested activity=command:sh entry=cmd-c1 session=s1 argv="/bin/sh -c \"echo hi there\"" mode=read_only workspace=/w requested_by=u`,
		"command.requested activity=command:nope entry=cmd-c2",
		"command.started entry=cmd-c1 worker=w1 host=h pid=42",
		`command.refused entry=cmd-c2 reason="not found: nope"`,
		"command.exited entry=cmd-c1 code=3 duration_ms=7 output_bytes=9",
		"session.entry_closed entry=cmd-c1 outcome=\"exit 3\"",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "cmd-c3") {
		t.Errorf("timeline shows another session's command:\n%s", got)
	}
	for i := 1; i < len(items); i++ {
		if items[i].Seq <= items[i-1].Seq {
			t.Fatalf("items out of stream order at %d: %d after %d", i, items[i].Seq, items[i-1].Seq)
		}
	}
	if len(items) != 9-1 { // every event of s1, c1 and c2
		t.Errorf("%d items, want 8", len(items))
	}

	if _, err := replay.SessionTimeline(context.Background(), log, "nobody", []string{"c-none"}); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("unknown session and command: %v, want ErrNotFound", err)
	}
	// A session whose only trace is a command still has a timeline.
	if items, err := replay.SessionTimeline(context.Background(), log, "s2", []string{"c3"}); err != nil || len(items) != 1 {
		t.Errorf("s2: %d items, %v; want its command's request", len(items), err)
	}
}
