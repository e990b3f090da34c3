// Package humantext words what Logbook's commands print for a person:
// a count with its noun, how long ago a time was, a path under the home
// directory with "~", and an error message without the package prefixes
// of the sentinels it wraps. Its functions are pure and safe for
// concurrent use.
package humantext

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/sandbox"
)

// Plural returns "1 thing" or "n things": the noun's plural is noun+"s"
// unless given as pl[0].
func Plural(n int, noun string, pl ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(pl) > 0 {
		return fmt.Sprintf("%d %s", n, pl[0])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Ago says how long before now t was, as a person reads it on a
// terminal: "just now" (under 10 s), "42s ago", "3m ago", "2h ago" (up to
// 48 h), "5d ago"; "-" for the zero time, "in 2m" for a time ahead of
// now.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, ""
	}
	var s string
	switch {
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	if suffix == "" {
		return "in " + s
	}
	return s + suffix
}

// HomeTilde writes a path under the home directory home with "~" in its
// place; home "" or "/" leaves path as it is.
func HomeTilde(path, home string) string {
	if home == "" || home == "/" {
		return path
	}
	if path == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(path, home+"/"); ok {
		return "~/" + rest
	}
	return path
}

// sentinelPhrases maps the text of the sentinels, which begin with their
// package's name, to what a person reads in their place.
var sentinelPhrases = []struct{ text, say string }{
	{events.ErrNotFound.Error(), "not found"},
	{events.ErrRejected.Error(), "refused"},
	{events.ErrMalformed.Error(), "malformed"},
	{events.ErrConflict.Error(), "changed meanwhile, try again"},
	{events.ErrMissingCause.Error(), "cause missing or incomplete"},
	{events.ErrUnknownType.Error(), "unknown event type"},
	{events.ErrUnknownVersion.Error(), "unknown schema version"},
	{sandbox.ErrRefused.Error(), "refused"},
	{nats.ErrConnectionClosed.Error(), "the server went away (its connection closed)"},
}

// Message returns an error's message msg as a person reads it: the
// sentinels' package prefixes gone ("events: command rejected: unknown
// phase" reads "unknown phase"), a prefix said twice said once ("hook
// claude: claude hook: …" reads "hook claude: …", "workspace archive:
// archive: x" reads "workspace archive: x").
func Message(msg string) string {
	for _, p := range sentinelPhrases {
		if p.text == events.ErrNotFound.Error() {
			msg = strings.ReplaceAll(msg, p.text, p.say)
			continue
		}
		// A sentinel followed by the detail: the detail says it.
		msg = strings.ReplaceAll(msg, p.text+": ", "")
		msg = strings.ReplaceAll(msg, p.text, p.say)
	}
	msg = strings.ReplaceAll(msg, "hook claude: claude hook: ", "hook claude: ")
	msg = strings.ReplaceAll(msg, "hook claude: claude hook ", "hook claude: ")
	msg = strings.ReplaceAll(msg, "hook codex: codex notify: ", "hook codex: ")
	msg = strings.ReplaceAll(msg, "hook codex: codex notify ", "hook codex: ")
	return collapseRepeats(msg)
}

// collapseRepeats drops a part of msg (between ": ") that says again
// what the part before it ends with.
func collapseRepeats(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:1]
	for _, p := range parts[1:] {
		prev := out[len(out)-1]
		if p != "" && (p == prev || strings.HasSuffix(prev, " "+p)) {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}
