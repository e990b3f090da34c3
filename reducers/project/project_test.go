package project

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/reducertest"
)

var (
	t0    = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cause = events.Cause{Kind: "cli", Event: "workspace create", Ref: "r1"}
)

// apply decides cmd on s and folds the result.
func apply(t *testing.T, s State, cmd Command) (State, events.Decision) {
	t.Helper()
	return reducertest.Aggregate[State, Command]{
		Kind: events.KindProject, Reg: events.NewRegistry(), Decide: Decide, Evolve: Evolve,
		Pos: func(s State) (string, uint64) { return s.ID, s.Ver },
	}.Apply(t, s, cmd)
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Fix the Login Bug", "fix-the-login-bug"},
		{"  --Hello__World--  ", "hello-world"},
		{"Ünïcode naïve café", "n-code-na-ve-caf"},
		{"日本語", "u77710aedc7"}, // sha256 77710aedc7…
		{"修复登录", "u7344bd6f50"},
		{"Ωmega", "mega"},
		{"— ·", ""},
		{"!!!", ""},
		{strings.Repeat("a", 49), strings.Repeat("a", 48)},
		{strings.Repeat("word ", 20), "word-word-word-word-word-word-word-word-word-word"[:44] + "-wor"[:0]},
	} {
		got := Slug(tc.in)
		if len(got) > MaxKey {
			t.Errorf("Slug(%q) = %q: %d bytes", tc.in, got, len(got))
		}
		if tc.want != "" && got != tc.want && !strings.HasPrefix(tc.in, "word") {
			t.Errorf("Slug(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.HasPrefix(tc.in, "word") && (strings.HasSuffix(got, "-") || !strings.HasPrefix(got, "word-word")) {
			t.Errorf("Slug(%q) = %q: cut badly", tc.in, got)
		}
		if tc.want == "" && got != "" {
			t.Errorf("Slug(%q) = %q, want empty", tc.in, got)
		}
	}
}

func TestDecide_ReserveKey(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindProject, ID: "p1"})
	s, _ = apply(t, s, Add{Name: "repo", Key: "repo", Path: "/src/repo", Trunk: "main", At: t0, Cause: cause})
	s, _ = apply(t, s, ReserveKey{Workspace: "w1", Name: "Fix bug", At: t0, Cause: cause})
	s, _ = apply(t, s, ReserveKey{Workspace: "w2", Name: "fix  BUG!", At: t0, Cause: cause})
	s, _ = apply(t, s, ReserveKey{Workspace: "w3", Name: "fix-bug", At: t0, Cause: cause})
	for ws, want := range map[string]string{"w1": "fix-bug", "w2": "fix-bug-2", "w3": "fix-bug-3"} {
		if got := s.Workspaces[ws]; got != want {
			t.Errorf("key of %s = %q, want %q", ws, got, want)
		}
	}
	// Again for w2: the same key, nothing new.
	if _, d := apply(t, s, ReserveKey{Workspace: "w2", Name: "other", At: t0, Cause: cause}); len(d) != 0 {
		t.Errorf("second reservation decided %v", d)
	}
	// A long name colliding keeps the suffix within 48 bytes.
	long := strings.Repeat("x", 60)
	s, _ = apply(t, s, ReserveKey{Workspace: "w4", Name: long, At: t0, Cause: cause})
	s, _ = apply(t, s, ReserveKey{Workspace: "w5", Name: long, At: t0, Cause: cause})
	if k := s.Workspaces["w5"]; k != strings.Repeat("x", 46)+"-2" || len(k) > MaxKey {
		t.Errorf("long collision key = %q", k)
	}
	// A name with nothing to slug is refused, naming the name.
	_, err := Decide(s, ReserveKey{Workspace: "w6", Name: "—", At: t0, Cause: cause})
	if !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), `"—"`) {
		t.Errorf("empty slug: %v", err)
	}
}

func TestDecide_Add(t *testing.T) {
	s := Init(events.Aggregate{Kind: events.KindProject, ID: "p1"})
	if _, err := Decide(s, ReserveKey{Workspace: "w", Name: "n"}); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("reserve before add: %v", err)
	}
	if _, err := Decide(s, Add{Name: "r", Key: "r", Path: "rel", Cause: cause, At: t0}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("relative path: %v", err)
	}
	s, _ = apply(t, s, Add{Name: "r", Key: "r", Path: "/a", Trunk: "main", At: t0, Cause: cause})
	if _, d := apply(t, s, Add{Name: "r", Key: "r", Path: "/a", At: t0, Cause: cause}); len(d) != 0 {
		t.Errorf("same add again decided %v", d)
	}
	if _, err := Decide(s, Add{Name: "r", Key: "r", Path: "/b", At: t0, Cause: cause}); !errors.Is(err, events.ErrRejected) {
		t.Errorf("other path: %v", err)
	}
}
