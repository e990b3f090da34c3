package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
		{fmt.Errorf("load session/x: key events from 762: %w", nats.ErrConnectionClosed), "load session/x: key events from 762: the server went away (its connection closed)"},
	} {
		if got := userMessage(c.err); got != c.want {
			t.Errorf("userMessage(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}

// TestFlagUsageHasNoBackquotes: pflag takes a `word` in a flag's usage for
// the name of its value (UnquoteUsage), so help would read
// "--creds logbook creds issue"; no flag of any command has one.
func TestFlagUsageHasNoBackquotes(t *testing.T) {
	root := newRoot(&globals{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage has a backquote, which help shows as the value's name: %q", c.CommandPath(), f.Name, f.Usage)
			}
		}
		c.Flags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
