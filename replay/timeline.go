package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Item is one decision in a session's audit timeline: what changed, when,
// why, and the observation that caused it. Its JSON field names are a
// stable format:
//
//	seq, ver   stream sequence and position in the session
//	at         decision time (RFC 3339, UTC)
//	type       event type, e.g. "session.transitioned"
//	from, to   phases, activities or modes before and after, if any
//	activity   activity after a transition or of an opened entry
//	entry      entry, review or turn the event is about
//	detail     the rest of the payload as "key=value" pairs, stable order
//	action     what the tool call the item is about does, cut to 80
//	           characters on one line: its command, file, path, pattern
//	           or URL, from the observed tool use or permission signal
//	           whose id is the item's entry, or a review's action; absent
//	           when none is known
//	cause      the envelope's cause (kind, event, detail, ref)
//	obs        the observation cause.ref names, when it is in the session
//	signed     the verifier's judgement of the stored event: "attested",
//	           "before-signing" (stored before signing began), or for an
//	           unattested one its status; absent when the log was read
//	           unjudged (no admin key pinned)
//	key_id     the signing key's id; principal and role: whom the key
//	           is registered to and what it may append
type Item struct {
	Seq      uint64        `json:"seq"`
	Ver      uint64        `json:"ver"`
	At       time.Time     `json:"at"`
	Type     string        `json:"type"`
	From     string        `json:"from,omitempty"`
	To       string        `json:"to,omitempty"`
	Activity string        `json:"activity,omitempty"`
	Entry    string        `json:"entry,omitempty"`
	Detail   string        `json:"detail,omitempty"`
	Action   string        `json:"action,omitempty"`
	Cause    *events.Cause `json:"cause,omitempty"`
	Obs      *ObsRef       `json:"obs,omitempty"`
	// Signed, KeyID, Principal and Role are who signed the event
	// (events.Signer), so a verdict signed by a registered but
	// unexpected key stands out.
	Signed    string `json:"signed,omitempty"`
	KeyID     string `json:"key_id,omitempty"`
	Principal string `json:"principal,omitempty"`
	Role      string `json:"role,omitempty"`
	// By is the person who asked for the event (its envelope's actor,
	// "person:<user>@<host>", as the CLI, the socket or a token named
	// them): a session ended or an entry abandoned by hand, a command a
	// person ran. "" for events no person asked for.
	By string `json:"by,omitempty"`
	// Unattested is set on an event the log left out of every fold
	// (see Unattested); its other fields are then Seq, Type and Detail.
	Unattested *Unattested `json:"unattested,omitempty"`
}

// ObsRef summarizes the observation behind an Item. JSON names: id, seq,
// type ("obs.claude.line" …), kind (line type or hook event), line (for
// transcript lines), key (idempotency key), signals (each "kind",
// "kind:name" or "kind:name=status", a tool use or permission followed
// by its input's first words in parentheses) and, for a reconciler tick
// (obs.reconciler.tick), tick: the facts it stored (events.Tick: when it
// looked, the last observation, the quiet period, the process check).
type ObsRef struct {
	ID      string   `json:"id"`
	Seq     uint64   `json:"seq"`
	Type    string   `json:"type"`
	Kind    string   `json:"kind"`
	Line    int      `json:"line,omitempty"`
	Key     string   `json:"key,omitempty"`
	Signals []string `json:"signals"`
	// Tick is the stored evidence of a reconciler tick; nil for any
	// other observation.
	Tick *events.Tick `json:"tick,omitempty"`
	// Sender is the user who sent the observation over serve's system
	// socket (events.Observation.Sender); nil for any other.
	Sender *events.Sender `json:"sender,omitempty"`
}

// Timeline returns the audit timeline of session id, read with Log.Load:
// one Item per decision (every event but observations), in stream order,
// each with its cause resolved to the observation it came from when that
// observation is in the session. The error wraps events.ErrNotFound for a
// session with no events.
func Timeline(ctx context.Context, log events.Log, id string) ([]Item, error) {
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	recs, err := loadTimeline(ctx, log, agg)
	if err != nil {
		return nil, err
	}
	return TimelineOf(recs), nil
}

// loadTimeline returns agg's records, read with log.Load, for a timeline.
// Its errors name the timeline; one for an aggregate with no events wraps
// events.ErrNotFound.
func loadTimeline(ctx context.Context, log events.Log, agg events.Aggregate) ([]events.Record, error) {
	recs, _, err := log.Load(ctx, agg)
	if err != nil {
		return nil, fmt.Errorf("timeline %s: %w", agg, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("timeline %s: %w", agg, events.ErrNotFound)
	}
	return recs, nil
}

// TimelineOf returns the timeline of recs, the records of one aggregate
// in stream order (see Timeline).
func TimelineOf(recs []events.Record) []Item {
	obs := map[string]events.Record{}
	for _, r := range recs {
		if _, ok := events.Observed(r.Data); ok {
			obs[r.ID.String()] = r
		}
	}
	items := make([]Item, 0, len(recs)-len(obs))
	for _, r := range recs {
		if _, ok := events.Observed(r.Data); ok {
			continue
		}
		it := Item{Seq: r.Seq, Ver: r.Ver, At: r.At.UTC(), Type: r.Type, Cause: r.Cause}
		it.signedBy(r.Signer)
		if strings.HasPrefix(r.Actor, "person:") {
			it.By = r.Actor
		}
		describe(&it, r.Data)
		if d, ok := r.Data.(events.ReviewDecided); ok && len(d.Evidence) > 0 {
			// The user messages a verdict relied on (prompts, answers to
			// the agent's questions), in their words.
			var said []string
			for _, id := range d.Evidence {
				if o, ok := obs[id]; ok {
					ob, _ := events.Observed(o.Data)
					for _, s := range ob.Signals {
						if (s.Kind == events.SigPrompt || s.Kind == events.SigAnswer) && s.Text != "" {
							said = append(said, s.Text)
						}
					}
				}
			}
			var kv kvs
			kv.add("user_said", strings.Join(said, " | "))
			if len(kv) > 0 {
				it.Detail = strings.TrimSpace(it.Detail + " " + kv.String())
			}
		}
		if r.Cause != nil {
			if o, ok := obs[r.Cause.Ref]; ok {
				it.Obs = obsRef(o)
				if it.Action == "" {
					it.Action = actionOf(o, it.Entry)
				}
			}
		}
		items = append(items, it)
	}
	return items
}

// signedBy fills it's signer fields from s.
func (it *Item) signedBy(s events.Signer) {
	it.Signed, it.KeyID, it.Principal, it.Role = s.Status, s.Key, s.Principal, s.Role
}

// describe fills it's payload fields from p.
func describe(it *Item, p events.Payload) {
	var kv kvs
	switch d := p.(type) {
	case events.SessionStarted:
		kv.add("agent", d.Agent)
		kv.add("parent", d.Parent)
		kv.add("agent_type", d.AgentType)
		kv.add("mode", d.Mode)
		kv.add("cwd", d.Cwd)
		kv.add("model", d.Model)
		kv.add("rewritten_from", d.RewrittenFrom)
		kv.add("forked_from", d.ForkedFrom)
	case events.SessionTransitioned:
		it.From, it.To, it.Activity, it.Entry = d.From, d.To, d.Activity, d.EntryID
	case events.SessionActivityChanged:
		it.From, it.To = d.From, d.To
	case events.SessionEntryOpened:
		it.Entry, it.Activity = d.EntryID, d.Activity
		kv.add("lane", d.Lane)
		moved(it, &kv, d.Moves)
	case events.SessionEntryClosed:
		it.Entry = d.EntryID
		kv.add("outcome", d.Outcome)
		kv.add("by", d.By)
		kv.add("reason", d.Reason)
		moved(it, &kv, d.Moves)
	case events.SessionEntryAbandoned:
		it.Entry = d.EntryID
		kv.add("reason", d.Reason)
		kv.add("evidence", d.Evidence)
	case events.SessionModeChanged:
		it.From, it.To = d.From, d.To
		kv.add("revision", strconv.Itoa(d.Revision))
		kv.add("agent_mode", d.AgentMode)
	case events.SessionDescribed:
		kv.add("cwd", d.Cwd)
		kv.add("model", d.Model)
		kv.add("git_branch", d.GitBranch)
		kv.add("version", d.Version)
		kv.add("title", d.Title)
	case events.SessionTurnStarted:
		it.Entry = "turn-" + strconv.Itoa(d.Turn)
		kv.add("prompt", d.PromptID)
	case events.SessionTurnEnded:
		it.Entry = "turn-" + strconv.Itoa(d.Turn)
		kv.add("outcome", d.Outcome)
	case events.SessionEnded:
		it.From = d.From
		it.To = events.PhaseEnded
		kv.add("reason", d.Reason)
		kv.add("evidence", d.Evidence)
	case events.ReviewRequested:
		it.Entry = d.ReviewID
		it.Action = shortText(d.Action, 80)
		kv.add("tool", d.Tool)
		kv.add("action", d.Action)
		if d.Gate {
			kv.add("event", d.Event)
			kv.add("mode", d.Mode)
			kv.add("revision", strconv.Itoa(d.Revision))
			kv.add("risk", d.Risk)
			kv.add("rule", d.Rule)
			kv.add("grant", d.Grant)
			kv.add("justification", d.Justification)
			kv.add("args", d.ArgsDigest)
		}
	case events.ReviewDecided:
		it.Entry = d.ReviewID
		kv.add("verdict", d.Verdict)
		kv.add("outcome", d.Outcome)
		kv.add("risk", d.Risk)
		kv.add("user_authorization", d.UserAuthorization)
		if d.DecidedBy != nil {
			kv.add("decided_by", strings.TrimSuffix(d.DecidedBy.Kind+":"+d.DecidedBy.Name, ":"))
		}
		kv.add("evidence", strings.Join(d.Evidence, ","))
		if d.EvidenceDropped {
			kv.add("evidence_dropped", "true")
		}
		kv.add("reason", d.Reason)
	case events.ReviewBreakerTripped:
		kv.add("refusals", strconv.Itoa(d.Refusals))
		kv.add("window", strconv.Itoa(d.Window))
	case events.ReviewBreakerReset:
		kv.add("reason", d.Reason)
	case events.SessionEntryLateResult:
		it.Entry = d.EntryID
		kv.add("outcome", d.Outcome)
		kv.add("late", "true")
	case events.SessionForked:
		it.Entry = "turn-" + strconv.Itoa(d.Turn)
		kv.add("prompt", d.PromptID)
		kv.add("open", strings.Join(d.Open, ","))
	case events.SessionTranscriptDiverged:
		kv.add("path", d.Path)
		kv.add("imported", fingerprint(d.Imported))
		kv.add("found", fingerprint(d.Found))
		kv.add("size", strconv.FormatInt(d.Size, 10))
		kv.add("new_session", d.NewSession)
	case events.NotificationSent:
		it.Entry = d.Key
		kv.add("rule", d.Rule)
		kv.add("on", d.On)
		kv.add("sink", d.Sink+"("+d.Kind+")")
		kv.add("about", d.Type+"@"+strconv.FormatUint(d.Seq, 10))
		kv.add("title", d.Title)
	}
	it.Detail = kv.String()
}

// moved puts the phase move an entry event carries (events.TransitionOf)
// in it: its phases as From and To, its activity as detail phase_activity
// (the item's Activity stays the entry's). mv nil leaves it as it is.
func moved(it *Item, kv *kvs, mv *events.SessionTransitioned) {
	if mv == nil {
		return
	}
	it.From, it.To = mv.From, mv.To
	kv.add("phase_activity", mv.Activity)
}

// fingerprint renders f as "line:<n>@<offset>-<end>:<first 12 hex of sha256>",
// or "none" for a line the file does not have.
func fingerprint(f events.Fingerprint) string {
	if f.SHA256 == "" {
		return fmt.Sprintf("none(line:%d@%d)", f.Line, f.Offset)
	}
	return fmt.Sprintf("line:%d@%d-%d:%.12s", f.Line, f.Offset, f.End, f.SHA256)
}

// kvs renders "key=value" pairs in the order added, skipping empty
// values and quoting values that hold spaces, quotes, '=' or characters
// Escape would show escaped (strconv.Quote escapes each of them).
type kvs []string

func (kv *kvs) add(k, v string) {
	if v == "" {
		return
	}
	if strings.ContainsAny(v, " \"=") || Escape(v) != v {
		v = Quote(v)
	}
	*kv = append(*kv, k+"="+v)
}

func (kv kvs) String() string { return strings.Join(kv, " ") }

// actionOf returns what the tool call entry does as observation r saw
// it (the input of its tool use or permission signal, cut to 80
// characters), or "".
func actionOf(r events.Record, entry string) string {
	o, _ := events.Observed(r.Data)
	if entry == "" || o == nil {
		return ""
	}
	for _, s := range o.Signals {
		if (s.Kind != events.SigToolUse && s.Kind != events.SigPermission) || s.ID != entry {
			continue
		}
		text := s.Text
		if text == "" {
			text = toolInputText(o.Raw, s.ID)
		}
		if text != "" {
			return shortText(text, 80)
		}
	}
	return ""
}

func obsRef(r events.Record) *ObsRef {
	o, _ := events.Observed(r.Data)
	ref := &ObsRef{ID: r.ID.String(), Seq: r.Seq, Type: r.Type, Kind: o.Kind, Line: o.Line, Key: o.Key, Signals: []string{}, Sender: o.Sender, Tick: o.Tick}
	for _, s := range o.Signals {
		sig := s.Kind
		if s.Name != "" {
			sig += ":" + s.Name
		}
		if s.Status != "" {
			sig += "=" + s.Status
		}
		if s.Kind == events.SigToolUse || s.Kind == events.SigPermission {
			// The call's command or file, from a transcript as from a
			// hook: what a person looks for in an audit.
			text := s.Text
			if text == "" && s.ID != "" {
				text = toolInputText(o.Raw, s.ID)
			}
			if text != "" {
				sig += "(" + shortText(text, 80) + ")"
			}
		}
		ref.Signals = append(ref.Signals, sig)
	}
	return ref
}

// WriteText writes items one line each, in a stable format:
//
//	#<seq> <at> <type> [<from>→<to>] [activity=<a>] [entry=<e>] [<detail>]  [by=<person>]  signed=<principal>/<role> (key <id>)  cause=<kind>/<event>[/<detail>] ref=<ref>  obs=<line N|key K> <kind> [<signals>] [sender=<user> sender_uid=<uid>]
//
// e.g.
//
//	#42 2026-04-24T19:19:00.393000Z session.transitioned working→ready activity=  signed=writer@host/writer (key 3fa2…)  cause=transcript/assistant ref=01J…  obs=line 7 assistant [text turn_end]
//
// signed= is "before-signing" for an event stored before signing began,
// and absent when the log was read unjudged and on an unattested item
// (whose detail names who appended it).
//
// Times are in UTC, all of them. An item decided from a transcript line
// (ObsRef.Line set: its time the agent's own) earlier than such an item
// before it (the agent's clock went back) says so after its type; items
// of other clocks are not compared: a workspace's, a task's, and the
// server's, which dates what it receives (a hook, a notification) and
// its reconciler's ticks. A tool call's or a
// permission prompt's signal carries its command or file, cut to 80
// characters: tool_use:Bash(go test ./...).
//
// Transitions always show activity=, even when empty. Every field passes
// Escape: one item is one line whatever its fields hold. It returns the
// first write error.
func WriteText(w io.Writer, items []Item) error {
	t := TextWriter{W: w}
	return t.Write(items)
}

// TextWriter writes a timeline handed over in parts, one after the
// other, as WriteText writes the whole of it: an item decided from a
// transcript line is compared with such items of the parts before it too.
// Write it a part at a time; the zero TextWriter with W set is ready. It
// is not safe for concurrent use.
type TextWriter struct {
	W    io.Writer
	last time.Time // the latest agent time of the items written so far
	b    []byte    // reused across parts
	// signer is who signed the last item written that was not
	// unattested (Signed, KeyID, Principal, Role), and signed what
	// appendSigned wrote of it: a timeline's items are signed by a few
	// keys, each written once and copied for the items after it.
	signer     [4]string
	signed     []byte
	haveSigner bool
}

// Write writes items, the timeline's next part, one line each (WriteText's
// format). It returns the first write error of W.
func (t *TextWriter) Write(items []Item) error {
	b, last := t.b[:0], t.last
	defer func() { t.b, t.last = b[:0], last }()
	flush := func() error {
		if _, err := t.W.Write(b); err != nil {
			return fmt.Errorf("write timeline: %w", err)
		}
		b = b[:0]
		return nil
	}
	for _, it := range items {
		b = append(b, '#')
		b = strconv.AppendUint(b, it.Seq, 10)
		b = append(b, ' ')
		if it.At.IsZero() {
			// An event that does not decode, quarantined, says no time
			// that can be read.
			b = append(b, "(no time)"...)
		} else {
			b = appendTime(b, it.At)
		}
		b = append(b, ' ')
		b = appendEscape(b, it.Type)
		if it.Obs != nil && it.Obs.Line > 0 {
			if !last.IsZero() && it.At.Before(last) {
				// The agent's clock went back (a clock step, or lines
				// of another host).
				b = fmt.Appendf(b, " (agent clock went back %s)", last.Sub(it.At))
			}
			if it.At.After(last) {
				last = it.At
			}
		}
		if it.From != "" || it.To != "" {
			b = append(b, ' ')
			b = appendEscape(b, it.From)
			b = append(b, "→"...)
			b = appendEscape(b, it.To)
		}
		if it.Activity != "" || it.Type == "session.transitioned" {
			b = append(b, " activity="...)
			b = appendEscape(b, it.Activity)
		}
		if it.Entry != "" {
			b = append(b, " entry="...)
			b = appendEscape(b, it.Entry)
		}
		if it.Detail != "" {
			b = append(b, ' ')
			b = appendEscape(b, it.Detail)
		}
		if it.By != "" {
			b = append(b, "  by="...)
			b = appendEscape(b, it.By)
		}
		if it.Unattested == nil {
			if k := [4]string{it.Signed, it.KeyID, it.Principal, it.Role}; !t.haveSigner || k != t.signer {
				t.signer, t.signed, t.haveSigner = k, it.appendSigned(t.signed[:0]), true
			}
			b = append(b, t.signed...)
		}
		if c := it.Cause; c != nil {
			b = append(b, "  cause="...)
			b = appendEscape(b, c.Kind)
			b = append(b, '/')
			b = appendEscape(b, c.Event)
			if c.Detail != "" {
				b = append(b, '/')
				b = appendEscape(b, c.Detail)
			}
			b = append(b, " ref="...)
			b = appendEscape(b, c.Ref)
		}
		if o := it.Obs; o != nil {
			b = append(b, "  obs="...)
			if o.Line > 0 {
				b = append(b, "line "...)
				b = strconv.AppendInt(b, int64(o.Line), 10)
			} else {
				b = append(b, "key "...)
				b = appendEscape(b, o.Key)
			}
			b = append(b, ' ')
			b = appendEscape(b, o.Kind)
			b = append(b, " ["...)
			b = appendEscape(b, strings.Join(o.Signals, " "))
			b = append(b, ']')
			if o.Sender != nil {
				b = append(b, " sender="...)
				b = appendEscape(b, cmp.Or(o.Sender.User, "-"))
				b = append(b, " sender_uid="...)
				b = strconv.AppendUint(b, uint64(o.Sender.UID), 10)
			}
		}
		b = append(b, '\n')
		if len(b) >= 32<<10 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(b) == 0 {
		return nil
	}
	return flush()
}

// appendSigned appends what WriteText prints of who signed it,
// "  signed=" and each part through Escape, or nothing.
func (it Item) appendSigned(b []byte) []byte {
	switch {
	case it.Unattested != nil || it.Signed == "":
		return b
	case it.Signed == "before-signing":
		return append(b, "  signed=before-signing"...)
	}
	b = append(b, "  signed="...)
	switch {
	case it.KeyID == "":
		return appendEscape(b, it.Signed)
	case it.Principal == "":
		b = appendEscape(b, it.Signed)
	default:
		b = appendEscape(b, it.Principal)
		b = append(b, '/')
		b = appendEscape(b, it.Role)
	}
	b = append(b, " (key "...)
	b = appendEscape(b, it.KeyID)
	return append(b, ')')
}

// shortText returns s on one line, at most n runes, cut with "…".
func shortText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// toolInputText returns what a person reads first of the input of tool
// call id in raw, a Claude Code transcript line (format of Claude Code
// 2.1.x: message.content[] items of type "tool_use" with id and input):
// its command, file path, path, pattern, URL or description; "" when raw
// is not such a line (a hook payload, a line cut to the cap) or names no
// such call.
func toolInputText(raw, id string) string {
	if raw == "" || !strings.Contains(raw, id) {
		return ""
	}
	var line struct {
		Message struct {
			Content []struct {
				Type  string         `json:"type"`
				ID    string         `json:"id"`
				Input map[string]any `json:"input"`
			} `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal([]byte(raw), &line) != nil {
		return ""
	}
	for _, c := range line.Message.Content {
		if c.Type != "tool_use" || c.ID != id {
			continue
		}
		for _, k := range []string{"command", "file_path", "notebook_path", "path", "pattern", "url", "query", "description"} {
			if v, ok := c.Input[k].(string); ok && v != "" {
				return v
			}
		}
	}
	return ""
}

// appendTime appends t in UTC as events.TimeFormat lays it out
// ("2006-01-02T15:04:05.000000Z"), the same bytes as AppendFormat
// writes, digit by digit for the years 0 to 9999: AppendFormat parses
// its layout on every call, and in an audit of 20,000 events it took
// about 40% of WriteText's time.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, events.TimeFormat)
	}
	hour, minute, sec := t.Clock()
	us := t.Nanosecond() / 1000
	b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-')
	b = append(b, byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T')
	b = append(b, byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':', byte('0'+sec/10), byte('0'+sec%10), '.')
	b = append(b, byte('0'+us/100000), byte('0'+us/10000%10), byte('0'+us/1000%10), byte('0'+us/100%10), byte('0'+us/10%10), byte('0'+us%10), 'Z')
	return b
}
