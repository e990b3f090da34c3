package api

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" || hidden != tc.hidden {
				t.Errorf("ids (-want +got):\n%s\nhidden %d, want %d", diff, hidden, tc.hidden)
			}
			if tc.f.Tree && got[len(got)-1].Depth != 1 {
				t.Errorf("child at depth %d, want 1", got[len(got)-1].Depth)
			}
		})
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
	for b.Loop() {
		if got, _ := (SessionList{}).Select(rows, now); len(got) != len(rows) {
			b.Fatalf("%d rows", len(got))
		}
	}
}
