package term

import (
	"bytes"
	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSessionsView covers the narrow table's parts: times relative to now
// on a terminal, ~ for the home directory, a long path cut at its start
// at a separator, ids cut to the shortest unique prefix of 8 or more.
func TestSessionsView(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		time.Second: "just now", 30 * time.Second: "30s ago", 3 * time.Minute: "3m ago",
		5 * time.Hour: "5h ago", 72 * time.Hour: "3d ago", -2 * time.Minute: "in 2m",
	} {
		if got := Ago(now, now.Add(-d)); got != want {
			t.Errorf("Ago(%s) = %q, want %q", d, got, want)
		}
	}
	if got := HomeTilde("/home/u/p", "/home/u"); got != "~/p" {
		t.Errorf("HomeTilde = %q", got)
	}
	if got := HomeTilde("/home/uv/p", "/home/u"); got != "/home/uv/p" {
		t.Errorf("HomeTilde of a sibling = %q", got)
	}
	if got := EllipsizeLeft("/a/very/long/path/to/somewhere", 16); got != "…/to/somewhere" {
		t.Errorf("EllipsizeLeft = %q", got)
	}
	got := ShortIDs([]string{"5e551011-0000-4000-8000-000000000001", "5e551011-0000-4000-8000-000000000002", "abcdef12-0000-4000-8000-000000000001", "short"}, 8)
	want := []string{"5e551011-0000-4000-8000-000000000001", "5e551011-0000-4000-8000-000000000002", "abcdef12", "short"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ShortIDs (-want +got):\n%s", diff)
	}
	// A subagent's id counts from after "agent-": 8 of the agent's own
	// characters at least, as a session's.
	got = ShortIDs([]string{"agent-a3f0000000000000009", "agent-a3e1111111111111118", "abcdef12-0000-4000-8000-000000000001", "agent-a12"}, 8)
	want = []string{"agent-a3f00000", "agent-a3e11111", "abcdef12", "agent-a12"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ShortIDs of subagents (-want +got):\n%s", diff)
	}
	// A rewritten history's id is the session's and "-r<n>": shown to the
	// end of that part, never cut at the dash.
	got = ShortIDs([]string{"5e551011-0000-4000-8000-000000000001", "5e551011-0000-4000-8000-000000000001-r12", "abcdef12-0000-4000-8000-000000000001"}, 8)
	want = []string{"5e551011-0000-4000-8000-000000000001", "5e551011-0000-4000-8000-000000000001-r12", "abcdef12"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ShortIDs of a rewritten history (-want +got):\n%s", diff)
	}
	if got := Plural(1, "transcript file"); got != "1 transcript file" {
		t.Errorf("Plural(1) = %q", got)
	}
	if got := Plural(2, "transcript file"); got != "2 transcript files" {
		t.Errorf("Plural(2) = %q", got)
	}
}

// TestWrapLines: audit lines wider than the terminal wrap at spaces,
// continuation lines indented; short lines and long words stay whole.
func TestWrapLines(t *testing.T) {
	got := Wrap("#1 2026 session.transitioned ready→working cause=transcript/user\nshort\n"+strings.Repeat("x", 50)+"\n", 30)
	want := "#1 2026 session.transitioned\n    ready→working\n    cause=transcript/user\nshort\n" + strings.Repeat("x", 50) + "\n"
	if got != want {
		t.Errorf("Wrap:\n%s\nwant:\n%s", got, want)
	}
}

// TestSessionShowsAnEndTakenUpAgain: a session ended and taken up again
// (a hook after its end) shows its end as history beside its phase, not
// as an "ended" row that its phase contradicts.
func TestSessionShowsAnEndTakenUpAgain(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		phase, want, not string
	}{
		{events.PhaseEnded, "ended", "last ended"},
		{events.PhaseWorking, "last ended", "\nended "},
	} {
		var buf bytes.Buffer
		r := api.SessionReply{Session: session.State{ID: "s1", Phase: tc.phase, EndReason: "done", StartedAt: now, UpdatedAt: now}}
		if err := Session(&buf, r, now, nil); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.Contains(out, tc.want) || strings.Contains(out, tc.not) {
			t.Errorf("phase %s:\n%s\nwant %q, not %q", tc.phase, out, tc.want, tc.not)
		}
	}
}
