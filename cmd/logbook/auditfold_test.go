package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// foldSession is a session's records for TestTimelineFold: n events,
// every tenth record an observation of a tool use (its entry the events'
// entry) that the events after it name as their cause, and every 50th
// event a verdict whose evidence is the prompt observed just before it.
// later, when not zero, makes the observation at that index come only
// at the end, after the events that name it.
func foldSession(n, later int) []events.Record {
	agg := events.Aggregate{Kind: events.KindSession, ID: "s1"}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var (
		recs  []events.Record
		cause *events.Cause
		moved *events.Record
	)
	id := func(i int) ulid.ULID { return ulid.MustParse(fmt.Sprintf("01J0000000000000000000%04d", i)) }
	for i := range n {
		r := events.Record{Seq: uint64(100 + 2*i), Subject: agg.Subject(), Envelope: events.Envelope{
			ID: id(i), Agg: agg, Ver: uint64(i + 1), At: at.Add(time.Duration(i) * time.Second)}}
		switch {
		case i%10 == 0:
			r.Type = "obs.claude.hook"
			r.Data = events.ClaudeHookObserved{Observation: events.Observation{Key: fmt.Sprint(i), Kind: "PreToolUse",
				Signals: []events.Sig{{Kind: events.SigToolUse, ID: "toolu_1", Name: "Bash", Text: fmt.Sprintf("echo %d", i)},
					{Kind: events.SigPrompt, Text: fmt.Sprintf("said %d", i)}}}}
			cause = &events.Cause{Kind: "hook", Event: "PreToolUse", Ref: r.ID.String()}
		case i%50 == 1:
			r.Type, r.Cause = "review.decided", cause
			r.Data = events.ReviewDecided{ReviewID: "toolu_1", Verdict: "allow", Outcome: "approved", Evidence: []string{id(i - 1).String()}}
		default:
			r.Type, r.Cause = "session.entry_opened", cause
			r.Data = events.SessionEntryOpened{EntryID: "toolu_1", Activity: "tool:Bash", Lane: "main"}
		}
		if later != 0 && i == later {
			moved = &r
			continue
		}
		recs = append(recs, r)
	}
	if moved != nil {
		recs = append(recs, *moved)
	}
	return recs
}

// TestTimelineFold folds sessions batch by batch: the items are those
// replay.TimelineOf makes of the whole session, whose events name
// observations of earlier batches, of their own and none; and a session
// where an observation comes batches after the events that name it is
// found not exact (sessionAudit folds it whole).
func TestTimelineFold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		recs      []events.Record
		wantExact bool
	}{
		{"none", nil, true},
		{"one batch", foldSession(100, 0), true},
		{"many batches", foldSession(3*foldBatch+17, 0), true},
		{"observation in the same batch, after", foldSession(foldBatch-20, 10), true},
		{"observation batches later", foldSession(3*foldBatch, 10), false},
		{"evidence batches later", foldSession(3*foldBatch, 50), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f timelineFold
			for _, r := range tc.recs {
				if err := f.add(r); err != nil {
					t.Fatal(err)
				}
			}
			f.flush()
			if got := f.exact(); got != tc.wantExact {
				t.Fatalf("exact() = %v, want %v", got, tc.wantExact)
			}
			if !tc.wantExact {
				return
			}
			want := replay.TimelineOf(tc.recs)
			if diff := cmp.Diff(want, f.runs.flat(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("folded batch by batch (-whole +batches):\n%s", diff)
			}
			if f.records != len(tc.recs) || f.items != len(want) {
				t.Errorf("records = %d, items = %d, want %d and %d", f.records, f.items, len(tc.recs), len(want))
			}
		})
	}
}

// TestTimelineFold_LastBatchShort folds a session whose size the read
// said: the records before its last foldTail are folded by the time the
// last of them is added, and the items are those of the whole session.
func TestTimelineFold_LastBatchShort(t *testing.T) {
	t.Parallel()
	recs := foldSession(3*foldBatch+600, 0)
	var f timelineFold
	f.size(uint64(len(recs)))
	for i, r := range recs {
		if i == len(recs)-foldTail && len(f.batch) != 0 {
			t.Fatalf("%d records added, %d of them not folded; want the batch folded before the last %d", i, len(f.batch), foldTail)
		}
		if err := f.add(r); err != nil {
			t.Fatal(err)
		}
	}
	f.flush()
	if !f.exact() {
		t.Fatal("not exact")
	}
	if diff := cmp.Diff(replay.TimelineOf(recs), f.runs.flat(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("folded batch by batch (-whole +batches):\n%s", diff)
	}
}
