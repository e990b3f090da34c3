package main

import (
	"strings"
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
	rows := []sessionRow{
		{Summary: session.Summary{ID: "old-ended", Phase: "ended", UpdatedAt: at(48 * time.Hour), Cwd: "/w/a"}},
		{Summary: session.Summary{ID: "new-ended", Phase: "ended", UpdatedAt: at(time.Hour), Cwd: "/w/a"}},
		{Summary: session.Summary{ID: "parent", Phase: "working", UpdatedAt: at(3 * time.Hour), Cwd: "/w/ab"}},
		{Summary: session.Summary{ID: "child", Phase: "working", Parent: "parent", UpdatedAt: at(time.Minute), ObservedAt: at(time.Second), Cwd: "/w/ab/x"}},
		{Summary: session.Summary{ID: "ready", Phase: "ready", UpdatedAt: at(2 * time.Hour), Cwd: "/w/a/sub"}},
	}
	ids := func(rs []sessionRow) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		f      sessionsFlags
		want   []string
		hidden int
	}{
		{"default", sessionsFlags{}, []string{"child", "new-ended", "ready", "parent"}, 1},
		{"all", sessionsFlags{all: true}, []string{"child", "new-ended", "ready", "parent", "old-ended"}, 0},
		{"phase ended shows old", sessionsFlags{phase: "ended"}, []string{"new-ended", "old-ended"}, 0},
		{"since", sessionsFlags{since: "90m"}, []string{"child", "new-ended"}, 0},
		{"cwd", sessionsFlags{cwd: "/w/a"}, []string{"new-ended", "ready"}, 1},
		{"tree", sessionsFlags{tree: true}, []string{"new-ended", "ready", "parent", "child"}, 1},
		{"limit", sessionsFlags{limit: 2}, []string{"child", "new-ended"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := rows
			if tc.f.phase != "" {
				in = nil
				for _, r := range rows {
					if r.Phase == tc.f.phase {
						in = append(in, r)
					}
				}
			}
			got, hidden := tc.f.selectSessions(in, now)
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" || hidden != tc.hidden {
				t.Errorf("ids (-want +got):\n%s\nhidden %d, want %d", diff, hidden, tc.hidden)
			}
			if tc.f.tree && got[len(got)-1].depth != 1 {
				t.Errorf("child at depth %d, want 1", got[len(got)-1].depth)
			}
		})
	}
}

// TestSessionsView covers the narrow table's parts: times relative to now
// on a terminal, ~ for the home directory, a long path cut at its start
// at a separator, ids cut to the shortest unique prefix of 8 or more.
func TestSessionsView(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		time.Second: "just now", 30 * time.Second: "30s ago", 3 * time.Minute: "3m ago",
		5 * time.Hour: "5h ago", 72 * time.Hour: "3d ago", -2 * time.Minute: "in 2m",
	} {
		if got := ago(now, now.Add(-d)); got != want {
			t.Errorf("ago(%s) = %q, want %q", d, got, want)
		}
	}
	if got := homeTilde("/home/u/p", "/home/u"); got != "~/p" {
		t.Errorf("homeTilde = %q", got)
	}
	if got := homeTilde("/home/uv/p", "/home/u"); got != "/home/uv/p" {
		t.Errorf("homeTilde of a sibling = %q", got)
	}
	if got := ellipsizeLeft("/a/very/long/path/to/somewhere", 16); got != "…/to/somewhere" {
		t.Errorf("ellipsizeLeft = %q", got)
	}
	got := shortIDs([]string{"5e551011-0000-4000-8000-000000000001", "5e551011-0000-4000-8000-000000000002", "abcdef12-0000-4000-8000-000000000001", "short"}, 8)
	want := []string{"5e551011-0000-4000-8000-000000000001", "5e551011-0000-4000-8000-000000000002", "abcdef12", "short"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shortIDs (-want +got):\n%s", diff)
	}
	if got := plural(1, "transcript file"); got != "1 transcript file" {
		t.Errorf("plural(1) = %q", got)
	}
	if got := plural(2, "transcript file"); got != "2 transcript files" {
		t.Errorf("plural(2) = %q", got)
	}
}

// TestWrapLines: audit lines wider than the terminal wrap at spaces,
// continuation lines indented; short lines and long words stay whole.
func TestWrapLines(t *testing.T) {
	got := wrapLines("#1 2026 session.transitioned ready→working cause=transcript/user\nshort\n"+strings.Repeat("x", 50)+"\n", 30)
	want := "#1 2026 session.transitioned\n    ready→working\n    cause=transcript/user\nshort\n" + strings.Repeat("x", 50) + "\n"
	if got != want {
		t.Errorf("wrapLines:\n%s\nwant:\n%s", got, want)
	}
}
