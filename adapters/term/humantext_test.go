package term

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		pl   []string
		want string
	}{
		{1, nil, "1 file"}, {0, nil, "0 files"}, {3, nil, "3 files"}, {2, []string{"files kept"}, "2 files kept"},
	} {
		if got := Plural(c.n, "file", c.pl...); got != c.want {
			t.Errorf("Plural(%d, file, %v) = %q, want %q", c.n, c.pl, got, c.want)
		}
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "-"},
		{now.Add(-5 * time.Second), "just now"},
		{now.Add(-42 * time.Second), "42s ago"},
		{now.Add(-3 * time.Minute), "3m ago"},
		{now.Add(-47 * time.Hour), "47h ago"},
		{now.Add(-5 * 24 * time.Hour), "5d ago"},
		{now.Add(2 * time.Minute), "in 2m"},
		{now.Add(-999 * 24 * time.Hour), "999d ago"},
		{now.AddDate(-3, 0, 0), "3y ago"},
		{now.AddDate(0, 0, 1200), "in 3y"},
		// Past what a Duration holds (~292 years): the calendar's years,
		// not a saturated count of days, nor "just now" for a time
		// far ahead, whose negated difference would overflow.
		{now.AddDate(-1000, 0, 0), "1000y ago"},
		{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), "in 7973y"},
		{time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), "2025y ago"},
	} {
		if got := Ago(now, c.t); got != c.want {
			t.Errorf("Ago(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

func TestHomeTilde(t *testing.T) {
	for _, c := range []struct{ path, home, want string }{
		{"/home/a/x", "/home/a", "~/x"}, {"/home/a", "/home/a", "~"}, {"/home/ab", "/home/a", "/home/ab"}, {"/x", "/", "/x"}, {"/x", "", "/x"},
	} {
		if got := HomeTilde(c.path, c.home); got != c.want {
			t.Errorf("HomeTilde(%q, %q) = %q, want %q", c.path, c.home, got, c.want)
		}
	}
}

func TestMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("session x: %w", events.ErrNotFound), "session x: not found"},
		{fmt.Errorf("archive: %w: owned by a", events.ErrRejected), "archive: owned by a"},
		{errors.New("workspace archive: archive: x"), "workspace archive: x"},
		{errors.New("a: b: a: c"), "a: b: a: c"},
	} {
		if got := Message(c.err.Error()); got != c.want {
			t.Errorf("Message(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
