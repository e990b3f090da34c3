package events_test

import (
	"errors"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// A session id from outside input is refused when it has a subagent's
// shape ("agent-..."), or when ValidID refuses it; others pass.
func TestValidOwnSessionID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id       string
		subagent bool
		bad      bool
	}{
		{"5e551011-0000-4000-8000-000000000001", false, false},
		{"agent", false, false},
		{"my-agent-1", false, false},
		{"Agent-x", false, false}, // ids are case-sensitive: Claude Code writes "agent-"
		{"agent-", true, true},
		{"agent-zzz", true, true},
		{"../x", false, true},
		{"", false, true},
	} {
		err := events.ValidOwnSessionID(tc.id)
		if (err != nil) != tc.bad || errors.Is(err, events.ErrSubagentID) != tc.subagent || err != nil && !errors.Is(err, events.ErrMalformed) {
			t.Errorf("ValidOwnSessionID(%q) = %v", tc.id, err)
		}
	}
	err := events.ValidOwnSessionID("agent-zzz")
	if want := `events: malformed event: id "agent-zzz" begins with "agent-", which names a subagent's session ("agent-" and its agent id)`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
