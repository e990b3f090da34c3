package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// TestDecide_CwdNamesADirectory: a report whose cwd is not an absolute
// path, or holds a NUL byte, leaves the session's directory as it was (none
// at the start); an absolute one after it is taken.
func TestDecide_CwdNamesADirectory(t *testing.T) {
	for _, bad := range []string{"relative/path", ".", "/a\x00b", "../../etc"} {
		t.Run(fmt.Sprintf("%q", bad), func(t *testing.T) {
			h := newHistory(t)
			at := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
			report := func(cwd string) {
				h.lines++
				o := events.Observation{
					Key: fmt.Sprintf("line:%d", h.lines), Parser: "test/1", Line: h.lines, Kind: "user",
					Meta: events.Meta{SessionID: "s1", Cwd: cwd}, Signals: []events.Sig{sig(events.SigText, "text", "x")},
					Received: at, Live: true,
				}
				h.observeAt(events.ClaudeLineObserved{Observation: o}, at)
				at = at.Add(time.Second)
			}
			report(bad)
			if h.s.Cwd != "" {
				t.Fatalf("cwd %q taken from a report of %q", h.s.Cwd, bad)
			}
			report("/work/p")
			report(bad)
			if h.s.Cwd != "/work/p" {
				t.Fatalf("cwd %q; want /work/p kept over a later report of %q", h.s.Cwd, bad)
			}
		})
	}
}
