package api

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/reducers/session"
)

// TestSelectSessions covers what the session list keeps and in which
// order: the most recently active first, ended sessions last active over
// a day ago left out (and counted) unless --all or --phase ended, --since,
// --cwd (the dir and under it, not a sibling sharing its name's start),
// --tree with subagents right under their parent, --limit after all.
func TestSelectSessions(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	rows := []SessionRow{
		{Summary: session.Summary{ID: "old-ended", Phase: "ended", UpdatedAt: at(48 * time.Hour), Cwd: "/w/a"}},
		{Summary: session.Summary{ID: "new-ended", Phase: "ended", UpdatedAt: at(time.Hour), Cwd: "/w/a"}},
		{Summary: session.Summary{ID: "parent", Phase: "working", UpdatedAt: at(3 * time.Hour), Cwd: "/w/ab"}},
		{Summary: session.Summary{ID: "child", Phase: "working", Parent: "parent", UpdatedAt: at(time.Minute), ObservedAt: at(time.Second), Cwd: "/w/ab/x"}},
		{Summary: session.Summary{ID: "ready", Phase: "ready", UpdatedAt: at(2 * time.Hour), Cwd: "/w/a/sub"}},
	}
	ids := func(rs []SessionRow) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		f      SessionList
		want   []string
		hidden int
	}{
		{"default", SessionList{}, []string{"child", "new-ended", "ready", "parent"}, 1},
		{"all", SessionList{All: true}, []string{"child", "new-ended", "ready", "parent", "old-ended"}, 0},
		{"phase ended shows old", SessionList{Phase: "ended"}, []string{"new-ended", "old-ended"}, 0},
		{"since", SessionList{Since: "90m"}, []string{"child", "new-ended"}, 0},
		{"cwd", SessionList{Cwd: "/w/a"}, []string{"new-ended", "ready"}, 1},
		{"tree", SessionList{Tree: true}, []string{"new-ended", "ready", "parent", "child"}, 1},
		{"limit", SessionList{Limit: 2}, []string{"child", "new-ended"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := rows
			if tc.f.Phase != "" {
				in = nil
				for _, r := range rows {
					if r.Phase == tc.f.Phase {
						in = append(in, r)
					}
				}
			}
			got, hidden := tc.f.Select(in, now)
			if diff := gocmp.Diff(tc.want, ids(got)); diff != "" || hidden != tc.hidden {
				t.Errorf("ids (-want +got):\n%s\nhidden %d, want %d", diff, hidden, tc.hidden)
			}
			if tc.f.Tree && got[len(got)-1].Depth != 1 {
				t.Errorf("child at depth %d, want 1", got[len(got)-1].Depth)
			}
			own := slices.Clone(in)
			gotIn, hiddenIn := tc.f.SelectInPlace(own, now)
			if diff := gocmp.Diff(got, gotIn); diff != "" || hiddenIn != hidden {
				t.Errorf("SelectInPlace (-Select +SelectInPlace):\n%s\nhidden %d, Select's %d", diff, hiddenIn, hidden)
			}
		})
	}
}

// TestSelectInPlace checks SelectInPlace against Select on random lists:
// random activity times with ties, ended sessions old and new, a cwd
// filter, --since, --limit and --tree with subagents; the rows past the
// selection must be the rest of the input.
func TestSelectInPlace(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(7, 11))
	phases := []string{"ready", "working", "waiting", "ended"}
	for round := range 300 {
		n := rng.IntN(60)
		rows := make([]SessionRow, n)
		for i := range rows {
			r := &rows[i]
			r.ID = fmt.Sprintf("s-%03d", rng.IntN(1000))
			r.Phase = phases[rng.IntN(len(phases))]
			r.UpdatedAt = now.Add(-time.Duration(rng.IntN(50)) * time.Hour)
			r.Cwd = []string{"/w/a", "/w/ab", "/w/a/x"}[rng.IntN(3)]
			if i > 0 && rng.IntN(4) == 0 {
				r.Parent = rows[rng.IntN(i)].ID
			}
		}
		l := SessionList{All: rng.IntN(3) == 0, Tree: rng.IntN(3) == 0, Limit: rng.IntN(3) * rng.IntN(20)}
		if rng.IntN(4) == 0 {
			l.Cwd = "/w/a"
		}
		if rng.IntN(4) == 0 {
			l.Since = "20h"
		}
		want, wantHidden := l.Select(rows, now)
		own := slices.Clone(rows)
		got, hidden := l.SelectInPlace(own, now)
		if diff := gocmp.Diff(want, got); diff != "" || hidden != wantHidden {
			t.Fatalf("round %d, %+v: (-Select +SelectInPlace):\n%s\nhidden %d, Select's %d", round, l, diff, hidden, wantHidden)
		}
		if l.Tree {
			continue // TreeOrder's rows are copies: own holds the selection before it
		}
		byID := func(rs []SessionRow) []SessionRow {
			return slices.SortedFunc(slices.Values(rs), func(a, b SessionRow) int {
				return cmp.Compare(a.ID+a.UpdatedAt.String()+a.Phase+a.Cwd+a.Parent, b.ID+b.UpdatedAt.String()+b.Phase+b.Cwd+b.Parent)
			})
		}
		if diff := gocmp.Diff(byID(rows), byID(own)); diff != "" {
			t.Fatalf("round %d: the rows after SelectInPlace are not the rows given (-given +after):\n%s", round, diff)
		}
	}
}

// BenchmarkSelectSessions orders 10,000 rows, as `logbook sessions` does
// for a history of 10,000 sessions.
func BenchmarkSelectSessions(b *testing.B) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rows := make([]SessionRow, 10_000)
	for i := range rows {
		rows[i].ID = fmt.Sprintf("s-%05d", i*7919%10_000)
		rows[i].Phase = "ready"
		rows[i].UpdatedAt = now.Add(-time.Duration(i*7919%997) * time.Minute)
	}
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			if got, _ := (SessionList{}).Select(rows, now); len(got) != len(rows) {
				b.Fatalf("%d rows", len(got))
			}
		}
	})
	b.Run("in-place", func(b *testing.B) {
		own := make([]SessionRow, len(rows))
		for b.Loop() {
			copy(own, rows)
			if got, _ := (SessionList{}).SelectInPlace(own, now); len(got) != len(rows) {
				b.Fatalf("%d rows", len(got))
			}
		}
	})
}

// TestSessionList_LimitWhileUpdated: a limited list that one page of the
// most recently active does not hold is read whole, not page after page
// by activity: a session on a later page that becomes active once the
// first page is read moves before the cursor, and a read by activity
// never meets it. Every session is listed, once. Pages here hold a few
// rows each (a small page size); the update comes through the real
// intake, between the first page and the next call.
func TestSessionList_LimitWhileUpdated(t *testing.T) {
	t.Parallel() // its own server and log
	e := newIntakeEnv(t)
	svc := e.service()
	svc.pageBytes = 3000
	defer runProjector(svc)()
	ctx := t.Context()
	hook := func(sid, call string) {
		t.Helper()
		if _, _, err := svc.HookThen(ctx, hookReq(t, sid, "pre", call), nil); err != nil {
			t.Fatal(err)
		}
	}
	const n = 30
	for i := range n {
		hook(fmt.Sprintf("s%02d", i), fmt.Sprintf("toolu_%d", i))
	}
	base := InProcess(map[string]func(context.Context, []byte) (any, error){VerbSessions: svc.Sessions}, t.Logf)
	var byActivity, calls int
	call := func(ctx context.Context, verb string, req, resp any) error {
		err := base(ctx, verb, req, resp)
		if r, ok := req.(SessionsRequest); ok && r.Order == OrderActivity {
			byActivity++
		}
		if calls++; calls == 1 {
			hook("s00", "toolu_again") // the oldest, on the last page by activity
			if err := svc.CaughtUp(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return err
	}
	rows, _, err := SessionList{Limit: n}.Rows(ctx, call, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[r.ID]++
	}
	for i := range n {
		if id := fmt.Sprintf("s%02d", i); seen[id] != 1 {
			t.Errorf("session %s listed %d times, want once (%d rows)", id, seen[id], len(rows))
		}
	}
	if byActivity != 1 {
		t.Errorf("%d pages asked by activity, want the first alone", byActivity)
	}
	if len(rows) > 0 && rows[0].ID != "s00" {
		t.Errorf("first row %s, want s00, active last", rows[0].ID)
	}
}
