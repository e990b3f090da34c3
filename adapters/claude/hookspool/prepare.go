package hookspool

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/redact/cut"
	"github.com/logbook-dev/logbook/events"
)

// Caps on a hook payload's fields, in bytes. A payload over one of them
// is refused with ErrFieldTooLong.
const (
	// MaxHookID caps ids, names and modes: session_id, tool_use_id,
	// tool_name, hook_event_name, prompt_id, agent_id, agent_type,
	// permission_mode, model, source, notification_type, trigger.
	MaxHookID = 256
	// MaxHookPath caps paths: transcript_path, cwd, agent_transcript_path.
	MaxHookPath = 4096
)

// hookFieldCap returns the cap on a top-level string field, or 0.
func hookFieldCap(name string) int {
	switch name {
	case "session_id", "tool_use_id", "tool_name", "hook_event_name", "prompt_id", "agent_id", "agent_type",
		"permission_mode", "model", "source", "notification_type", "trigger":
		return MaxHookID
	case "transcript_path", "cwd", "agent_transcript_path":
		return MaxHookPath
	}
	return 0
}

// CheckHook reports whether b is a hook payload adapters/claude's Parser.Hook
// accepts,
// with the same errors, without decoding more than the top-level fields
// it checks, redacting or building an observation: what a hook process
// checks before it spools b.
func CheckHook(b []byte) error {
	s, err := scanHook(bytes.TrimRight(b, " \t\r\n"), 0)
	if err != nil {
		return &HookError{Err: err}
	}
	_, err = checkHook(s.top)
	return err
}

// ReadHook reads and checks the hook payload b (trailing whitespace
// removed) as CheckHook does, and returns its top-level members (raw
// JSON values, sharing b's memory) and its hook_event_name: what a
// parser of the payload builds its observation from. Errors: CheckHook's.
func ReadHook(b []byte) (top map[string]json.RawMessage, event string, err error) {
	s, err := scanHook(b, 0)
	if err != nil {
		return nil, "", &HookError{Err: err}
	}
	event, err = checkHook(s.top)
	if err != nil {
		return nil, "", err
	}
	return s.top, event, nil
}

// checkHook checks a hook payload's top-level members, top, as adapters/claude's
// Parser.Hook
// does, and returns hook_event_name. Only the fields it checks are
// decoded. Errors: *HookError wrapping ErrFieldType, ErrFieldTooLong,
// ErrMissingField or events.ErrMalformed.
func checkHook(top map[string]json.RawMessage) (string, error) {
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	event := topStr(top, "hook_event_name")
	if len(event) > MaxHookID {
		return "", &HookError{Field: "hook_event_name", Err: fmt.Errorf("%w: %d bytes, at most %d", ErrFieldTooLong, len(event), MaxHookID)}
	}
	for _, k := range keys {
		want, got := hookFieldKind(k), jsonx.Kind(top[k])
		if want != "" && got != "null" && got != want {
			return "", &HookError{Event: event, Field: k, Err: fmt.Errorf("%w: want %s, got %s", ErrFieldType, want, got)}
		}
		// A string's decoded text is at most as long as its JSON text.
		if c := hookFieldCap(k); c > 0 && got == "string" && len(top[k]) > c+2 {
			if n := len(topStr(top, k)); n > c {
				return "", &HookError{Event: event, Field: k, Err: fmt.Errorf("%w: %d bytes, at most %d", ErrFieldTooLong, n, c)}
			}
		}
	}
	if event == "" {
		return "", &HookError{Field: "hook_event_name", Err: missing(top, "hook_event_name")}
	}
	if topStr(top, "session_id") == "" {
		return "", &HookError{Event: event, Field: "session_id", Err: missing(top, "session_id")}
	}
	// The ids name the session aggregate (SessionAggregate): refuse here,
	// by the log's own rule, what the server would refuse on delivery.
	// A subagent's session id is "agent-" and its agent_id: a session of
	// that name would be taken for one, and a subagent's events land in
	// it (events.ValidOwnSessionID, as every intake refuses it).
	if err := events.ValidOwnSessionID(topStr(top, "session_id")); err != nil {
		if errors.Is(err, events.ErrSubagentID) {
			err = fmt.Errorf("%w; Claude Code sends the parent's session_id and the agent_id", err)
		}
		return "", &HookError{Event: event, Field: "session_id", Err: err}
	}
	a := topStr(top, "agent_id")
	if a == "" && (event == "SubagentStart" || event == "SubagentStop") {
		// The subagent the event is about: without it, a subagent named
		// "agent-" of no session.
		return "", &HookError{Event: event, Field: "agent_id", Err: missing(top, "agent_id")}
	}
	if a != "" {
		err := events.ValidID(a)
		if err == nil {
			_, err = SessionAggregate("", a) // "agent-"+a within MaxIDLen
		}
		if err != nil {
			return "", &HookError{Event: event, Field: "agent_id", Err: err}
		}
	}
	return event, nil
}

// missing returns ErrMissingField for the required member key of top,
// saying so when it is there but null or an empty string.
func missing(top map[string]json.RawMessage, key string) error {
	switch r, ok := top[key]; {
	case !ok:
		return ErrMissingField
	case jsonx.Kind(r) == "null":
		return fmt.Errorf("%w: it is null", ErrMissingField)
	default:
		return fmt.Errorf("%w: it is an empty string", ErrMissingField)
	}
}

// topStr returns the text of the string member key of top, a payload's
// top-level members as scanHook read them (each a well-formed JSON
// value, nothing around it), or "" when it is absent or not a string.
// It decodes as encoding/json does (jsonx.Unquote), without its
// reflection, whose first use would cost every hook process dearly.
func topStr(top map[string]json.RawMessage, key string) string {
	r := top[key]
	if jsonx.Kind(r) != "string" {
		return ""
	}
	return jsonx.Unquote(r)
}

// hookFieldKind returns the JSON type a hook payload's top-level field
// must have when present and not null, or "" for fields read leniently or
// not read at all.
func hookFieldKind(name string) string {
	switch name {
	case "session_id", "transcript_path", "cwd", "permission_mode", "hook_event_name",
		"prompt_id", "tool_name", "tool_use_id", "prompt", "source", "model", "message",
		"notification_type", "agent_id", "agent_type", "agent_transcript_path", "trigger", "reason":
		return "string"
	case "stop_hook_active", "is_interrupt":
		return "boolean"
	case "tool_input":
		return "object"
	}
	return ""
}

// Hook payload caps applied by PrepareHook.
const (
	// MaxHookSend is the most a hook sends and spools of one payload, in
	// bytes: 256 KiB.
	MaxHookSend = 256 << 10
	// MaxHookString is what each string of an over-cap payload is cut
	// to, in bytes.
	MaxHookString = 4 << 10
	// CutMember is the top-level member PrepareHook adds to a payload it
	// cut: {"size": original bytes, "sha256": hex SHA-256 of the original}.
	CutMember = "logbook_cut"
	// MaxHookRead is the most a hook reads of a payload from its stdin,
	// in bytes: 32 MiB. A payload over it is refused (ErrTooLarge)
	// before it is scanned; one kept in the spool regardless is
	// refused by its deliverer.
	MaxHookRead = 32 << 20
)

// PrepareHook returns what a hook process spools for payload b: b itself
// (trailing whitespace removed) when it is at most MaxHookSend bytes;
// else b with every string cut to MaxHookString bytes (cut.Text,
// as redact.CutStrings cuts) and a CutMember naming the original's size
// and SHA-256, sum(b), which the parser turns into the observation's Cut;
// when that is still over MaxHookSend, its largest top-level members
// other than those naming the session, event and call and the call's
// input are each replaced by {DroppedMember: size} until it fits, and the
// CutMember lists them ("dropped").
// It reads b once (UTF-8, syntax, MaxHookDepth, MaxHookKeys) and decodes
// only the top-level fields it checks and the first MaxHookString bytes
// of each string it cuts. Errors: CheckHook's, and ErrTooLarge for a
// payload still over MaxHookSend after cutting and dropping (its message
// names the largest member kept).
//
// With sum nil (a binary that links no hash: logbook-hook), a payload
// over MaxHookSend is checked, and its cut made to see that it fits, but
// not returned cut: PrepareHook returns it trimmed with ErrMustCut, for
// the caller to spool as it is (serve's drain cuts it, as here) or hand
// to a program that cuts it; a payload the cut cannot bring under
// MaxHookSend is ErrTooLarge, as with a sum.
func PrepareHook(b []byte, sum func([]byte) [32]byte) ([]byte, error) {
	b = bytes.TrimRight(b, " \t\r\n")
	long := 0
	if len(b) > MaxHookSend {
		long = MaxHookString
	}
	s, err := scanHook(b, long)
	if err != nil {
		return nil, &HookError{Err: err}
	}
	if _, err := checkHook(s.top); err != nil {
		return nil, err
	}
	if len(b) <= MaxHookSend {
		return b, nil
	}
	if sum == nil {
		// The cut's size and checks do not depend on the sum it records
		// (64 hex digits whatever they are): cut with a placeholder, so
		// that a payload the cut cannot bring under the cap is refused
		// here, by the hook, not by the drain after the hook exited 0.
		if _, err := cutHook(b, s, func([]byte) [32]byte { return [32]byte{} }); err != nil {
			return nil, err
		}
		return b, ErrMustCut
	}
	return cutHook(b, s, sum)
}

// cutHook is PrepareHook's cut of payload b, over MaxHookSend bytes and
// scanned (s, its strings over MaxHookString noted) and checked: each
// long string cut, the CutMember added with sum(b), and members dropped
// until it fits. Errors: ErrTooLarge when it does not fit, CheckHook's.
func cutHook(b []byte, s *hookScan, sum func([]byte) [32]byte) ([]byte, error) {
	// The cut strings first, to know the result's size before building it.
	size := len(b)
	cuts := make([]string, len(s.longs))
	for i, sp := range s.longs {
		raw := b[sp.from:sp.to]
		text := unquotePrefix(raw, MaxHookString)
		if len(text) <= MaxHookString {
			continue // short once decoded: kept as written
		}
		cuts[i] = cut.QuoteJSON(cut.Text(text, MaxHookString))
		size += len(cuts[i]) - len(raw)
	}
	h := sum(b)
	member := fmt.Sprintf(`{%q:{"size":%d,"sha256":%q}`, CutMember, len(b), hex.EncodeToString(h[:]))
	if len(s.top) > 0 {
		member += ","
	}
	size += len(member) - 1
	out := make([]byte, 0, size)
	out = append(out, b[:s.objAt]...)
	out = append(out, member...)
	last := s.objAt + 1
	for i, sp := range s.longs {
		if cuts[i] == "" {
			continue
		}
		out = append(out, b[last:sp.from]...)
		out = append(out, cuts[i]...)
		last = sp.to
	}
	out = append(out, b[last:]...)
	if len(out) > MaxHookSend {
		// Still over with every string cut: a tool's answer of many
		// small parts (a listing of 20,000 paths). The hook still
		// happened; what is dropped is the bulk of what it carried.
		dropped, err := dropMembers(out, len(b), h)
		if err != nil {
			return nil, &HookError{Err: fmt.Errorf("%w: %d bytes; %v", ErrTooLarge, len(b), err)}
		}
		out = dropped
	}
	// Built from checked parts; checked again, cheaply, as the server
	// will read it.
	if err := CheckHook(out); err != nil {
		return nil, err
	}
	return out, nil
}

// keptMembers are the members of a hook payload dropMembers never
// drops: what names the session, the event and the call, and the call's
// input, which the gate reviews.
var keptMembers = map[string]bool{
	"session_id": true, "transcript_path": true, "cwd": true, "permission_mode": true,
	"hook_event_name": true, "tool_name": true, "tool_use_id": true, "tool_input": true,
	"agent_id": true, "agent_type": true, "agent_transcript_path": true, "prompt_id": true,
	CutMember: true,
}

// DroppedMember is what dropMembers puts in place of a top-level member
// it drops: {"logbook_dropped": original size of its value in bytes}.
const DroppedMember = "logbook_dropped"

// dropMembers returns out, a payload with its strings already cut and
// over MaxHookSend bytes, with its largest top-level members that are
// not keptMembers replaced by {DroppedMember: size} until it fits, and
// its CutMember naming the original's size (orig) and SHA-256 (sum) and
// the dropped members' names ("dropped"). Members are written in name
// order. An error, saying how large what is kept is and naming its
// largest member, when it cannot be made to fit.
func dropMembers(out []byte, orig int, sum [32]byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(out, &top); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(top))
	for k := range top {
		// A member of a known kind keeps its kind: the stub is an object.
		if !keptMembers[k] && hookFieldKind(k) == "" {
			names = append(names, k)
		}
	}
	// Largest first; ties by name, so the result is the same every time.
	sort.Slice(names, func(i, j int) bool {
		if a, b := len(top[names[i]]), len(top[names[j]]); a != b {
			return a > b
		}
		return names[i] < names[j]
	})
	size := len(out)
	var dropped []string
	for _, k := range names {
		if size <= MaxHookSend-1024 { // room for the cut member's list
			break
		}
		stub := fmt.Appendf(nil, `{%q:%d}`, DroppedMember, len(top[k]))
		size += len(stub) - len(top[k])
		top[k] = stub
		dropped = append(dropped, k)
	}
	sort.Strings(dropped)
	if len(dropped) > 16 {
		dropped = append(dropped[:16], fmt.Sprintf("… %d more", len(dropped)-16))
	}
	cutv, _ := json.Marshal(map[string]any{"size": orig, "sha256": hex.EncodeToString(sum[:]), "dropped": dropped})
	top[CutMember] = cutv
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(k)
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(top[k])
	}
	buf.WriteByte('}')
	if buf.Len() > MaxHookSend {
		// What is kept is too large: name its largest member.
		big := ""
		for k, v := range top {
			if keptMembers[k] && k != CutMember && (big == "" || len(v) > len(top[big]) || len(v) == len(top[big]) && k < big) {
				big = k
			}
		}
		return nil, fmt.Errorf("with each string cut to %d bytes and every member dropped but those naming the session, the event and the call and the call's input, still %d bytes, at most %d (%q alone is %d)", MaxHookString, buf.Len(), MaxHookSend, big, len(top[big]))
	}
	return buf.Bytes(), nil
}

// SessionAggregate returns the session aggregate of a Claude Code session
// id, or of a subagent ("agent-<agentID>") when agentID is set.
func SessionAggregate(sessionID, agentID string) (events.Aggregate, error) {
	id := sessionID
	if agentID != "" {
		id = "agent-" + agentID
		if len(id) > events.MaxIDLen {
			return events.Aggregate{}, fmt.Errorf("%w: %d bytes: want at most %d, since the subagent's session id (%q and the agent id) is at most %d",
				events.ErrMalformed, len(agentID), events.MaxIDLen-len("agent-"), "agent-", events.MaxIDLen)
		}
	}
	a := events.Aggregate{Kind: events.KindSession, ID: id}
	if err := a.Validate(); err != nil {
		return a, fmt.Errorf("session id: %w", err)
	}
	return a, nil
}
