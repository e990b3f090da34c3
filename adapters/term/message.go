package term

import (
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/sandbox"
)

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
