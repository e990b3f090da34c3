package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/logbook-dev/logbook/events"
)

// Trigger is what a rule makes of one event: a notification about it,
// due at Due.
type Trigger struct {
	Rule Rule
	// ID is what the idempotency key derives from (Key): the event's id,
	// or for an abandoned rule the id its decision's cause names, so that
	// the marks of one reconciler decision make one notification.
	ID  string
	Due time.Time // the event's time plus the rule's After
	// Delayed says the condition must still hold when the notification
	// is sent (Holds): a waiting or review_pending rule, even with After
	// 0, so a review the gate's rules decided at once tells nobody.
	Delayed bool
	Session string // the session the event concerns; "" when unknown
	Title   string
	Body    string
}

// Context is what a rule needs to know of an event beyond the event
// itself, read by the caller: for a command's event, its session and
// argv (from command.requested); for a session's turn end, its cost.
type Context struct {
	Session string
	Argv    []string
	// Cost is, for a session's turn end, what the session had spent by
	// then in USD (nil: unknown, nothing priced).
	Cost *float64
	// Name names the session for a person: its title, else its working
	// directory ("" when neither is known). Match cleans and cuts it.
	Name string
	// Waits is what the session waits on when a person is asked for a
	// permission ("permission for Bash: git push"), "" otherwise.
	Waits string
}

// MaxName is how many bytes of a session's title (or working
// directory) a notification's title carries.
const MaxName = 60

// Match returns what rule r makes of rec in context c, and false when r
// does not fire on it. It is pure: no clock, no I/O.
func Match(r Rule, rec events.Record, c Context) (Trigger, bool) {
	t := Trigger{Rule: r, ID: rec.ID.String(), Due: rec.At.Add(r.After), Session: c.Session}
	if t.Session == "" && rec.Agg.Kind == events.KindSession {
		t.Session = rec.Agg.ID
	}
	who := "session " + short(t.Session)
	if name := clip(oneLine(c.Name), MaxName); name != "" && t.Session != "" {
		who += " (" + name + ")"
	}
	switch r.On {
	case OnWaiting:
		d, ok := events.TransitionOf(rec.Data)
		if !ok || d.To != events.PhaseWaiting {
			return Trigger{}, false
		}
		t.Delayed = true
		on := waitsOn(d.Activity, c.Waits)
		t.Title = who + " waits for you"
		if on != "" {
			t.Title = who + " waits for you: " + clip(on, 80)
		}
		t.Body = "waiting"
		if on != "" {
			t.Body += " on " + clip(on, 200)
		}
		if r.After > 0 {
			t.Body += " for " + r.After.String()
		}
	case OnReviewPending:
		d, ok := rec.Data.(events.ReviewRequested)
		if !ok {
			return Trigger{}, false
		}
		t.Delayed = true
		what := "permission for " + oneLine(d.Tool)
		if d.Action != "" && !d.Notice { // a notice's action is its message
			what += ": " + oneLine(d.Action)
		}
		t.Title = who + ": review pending: " + clip(what, 80)
		t.Body = clip(what, 200)
		if r.After > 0 {
			t.Body += " (undecided for " + r.After.String() + ")"
		}
	case OnBreakerTripped:
		d, ok := rec.Data.(events.ReviewBreakerTripped)
		if !ok {
			return Trigger{}, false
		}
		t.Title = who + ": refusal breaker tripped"
		t.Body = fmt.Sprintf("%d refusals in the last %d verdicts; automatic approval stopped", d.Refusals, d.Window)
	case OnAbandoned:
		switch d := rec.Data.(type) {
		case events.SessionEnded:
			if d.Reason != "agent_gone" {
				return Trigger{}, false
			}
			t.Title = who + ": agent gone"
			t.Body = clip(oneLine(d.Evidence), 200)
		case events.SessionEntryAbandoned:
			if d.Reason != "stale" && d.Reason != "agent_gone" {
				return Trigger{}, false
			}
			t.Title = who + ": " + strings.ReplaceAll(d.Reason, "_", " ")
			t.Body = clip(oneLine(d.Evidence), 200)
		default:
			return Trigger{}, false
		}
		if rec.Cause != nil && rec.Cause.Ref != "" {
			t.ID = rec.Cause.Ref
		}
	case OnCommandFailed:
		d, ok := rec.Data.(events.CommandExited)
		if !ok || d.Stopped || d.Code == 0 && d.Signal == "" {
			return Trigger{}, false
		}
		how := fmt.Sprintf("exit %d", d.Code)
		if d.Signal != "" {
			how = "killed by " + d.Signal
		}
		t.Title = "command failed: " + how
		if t.Session != "" {
			t.Title = who + ": command failed (" + how + ")"
		}
		t.Body = clip(oneLine(strings.Join(c.Argv, " ")), 200)
	case OnSpend:
		if _, ok := rec.Data.(events.SessionTurnEnded); !ok || c.Cost == nil || *c.Cost < r.USD || t.Session == "" {
			return Trigger{}, false
		}
		t.ID = t.Session // once per session
		t.Title = who + " spent over $" + Dollars(r.USD)
		t.Body = "$" + dollarsLike(*c.Cost, r.USD) + " so far"
	default:
		return Trigger{}, false
	}
	return t, true
}

// Holds reports whether a delayed trigger t of rec still holds, given
// later, the events of rec's aggregate after rec in stream order: a
// waiting session that has not moved (no transition, no end), a review
// not decided (no review.decided of its id, no end). It is pure.
func Holds(t Trigger, rec events.Record, later []events.Record) bool {
	for _, l := range later {
		if _, moved := events.TransitionOf(l.Data); moved && t.Rule.On == OnWaiting {
			return false
		}
		switch d := l.Data.(type) {
		case events.SessionEnded:
			return false
		case events.ReviewDecided:
			if req, ok := rec.Data.(events.ReviewRequested); ok && t.Rule.On == OnReviewPending && d.ReviewID == req.ReviewID {
				return false
			}
		}
	}
	return true
}

// Types lists the event types some rule kind fires on, for a quick look
// at a message's type header before it is decoded. Entry events are not
// among them: the phase moves they carry (events.TransitionOf) are to
// working or ready, never to waiting, so no rule fires on them.
var Types = map[string]bool{
	events.SessionTransitioned{}.EventType():   true,
	events.ReviewRequested{}.EventType():       true,
	events.ReviewBreakerTripped{}.EventType():  true,
	events.SessionEnded{}.EventType():          true,
	events.SessionEntryAbandoned{}.EventType(): true,
	events.CommandExited{}.EventType():         true,
	events.SessionTurnEnded{}.EventType():      true,
}

// Key returns the idempotency key of the notification of rule to sink
// about the event (or decision) id: the lowercase hex of the first 16
// bytes of SHA-256 over rule, sink and id, NUL-separated (32 bytes). It
// is the notification aggregate's id and what a receiver gets.
func Key(rule, sink, id string) string {
	h := sha256.Sum256([]byte(rule + "\x00" + sink + "\x00" + id))
	return hex.EncodeToString(h[:16])
}

// short returns the first 8 bytes of a session id, or "?" for none.
func short(id string) string {
	if id == "" {
		return "?"
	}
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// clip cuts s to n bytes on a rune boundary, with "…" when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// waitsOn says what a waiting session waits on: a question or a plan
// when its activity says so, else waits (a permission, from its open
// review) when known, else its activity; "" when nothing says.
func waitsOn(activity, waits string) string {
	if waits != "" && activity != "question" && activity != "plan" {
		return oneLine(waits)
	}
	switch activity {
	case "":
		return ""
	case "question":
		return "a question"
	case "plan":
		return "a plan to approve"
	case "permission", "review":
		return "a permission"
	}
	return oneLine(activity)
}

// oneLine returns s with each run of control characters and white space
// (a newline, a tab, an escape) made one space, trimmed: what a
// notification's one-line title can carry of text from a session.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}

// Dollars formats a configured amount of dollars as written, with cents
// at least: 5 → "5.00", 0.0001 → "0.0001", 12.5 → "12.50".
func Dollars(usd float64) string {
	s := strconv.FormatFloat(usd, 'f', -1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	for len(frac) < 2 {
		frac += "0"
	}
	return whole + "." + frac
}

// dollarsLike formats v with as many decimals as the threshold usd is
// written with (2 at least), so a cost next to a threshold of $0.0001
// does not read $0.00.
func dollarsLike(v, usd float64) string {
	_, frac, _ := strings.Cut(Dollars(usd), ".")
	return strconv.FormatFloat(v, 'f', len(frac), 64)
}
