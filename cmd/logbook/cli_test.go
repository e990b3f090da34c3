package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestUserMessage_SaysEachThingOnce: sentinel prefixes go, and a part
// that repeats the end of the one before it is said once.
func TestUserMessage_SaysEachThingOnce(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("workspace archive: %w", fmt.Errorf("archive: %w: workspace wa is owned by session a", events.ErrRejected)), "workspace archive: workspace wa is owned by session a"},
		{fmt.Errorf("session x: %w", events.ErrNotFound), "session x: not found"},
		{errors.New("hook claude: claude hook Stop: field \"session_id\": missing field"), "hook claude: Stop: field \"session_id\": missing field"},
		{errors.New("hook codex: codex notify: malformed JSON at byte 2"), "hook codex: malformed JSON at byte 2"},
		{errors.New("come back with: logbook command output x --follow"), "come back with: logbook command output x --follow"},
		{errors.New("a: b: a: c"), "a: b: a: c"},
	} {
		if got := userMessage(c.err); got != c.want {
			t.Errorf("userMessage(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
