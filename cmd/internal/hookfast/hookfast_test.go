package hookfast

import (
	"bytes"
	"strings"
	"testing"
)

// TestNoSubcommand: arguments of flags alone (a flag's value included)
// name no subcommand; a word, help or "--" does.
func TestNoSubcommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"--data", "claude"}, true},
		{[]string{"--data=/d", "--gate"}, true},
		{[]string{"claude"}, false},
		{[]string{"--data", "/d", "codex"}, false},
		{[]string{"--help"}, false},
		{[]string{"-h"}, false},
	} {
		if got := NoSubcommand(c.args); got != c.want {
			t.Errorf("NoSubcommand(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestMain_NoSubcommand: a payload piped in with no subcommand is a
// usage mistake (1, never 2) saying it was not delivered, before anything is read
// or run.
func TestMain_NoSubcommand(t *testing.T) {
	var stderr bytes.Buffer
	code := Main(nil, strings.NewReader(`{"session_id":"s","hook_event_name":"Stop"}`), &stderr, "/nonexistent/logbook")
	if code != 1 || !strings.Contains(stderr.String(), "the payload on stdin was not delivered") || !strings.Contains(stderr.String(), "claude") || !strings.Contains(stderr.String(), "codex") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
}
