package claude

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/events"
)

// ParseHook parses one hook stdin payload, b, following the Claude Code
// hooks reference of v2.1.x. It compiles cfg on every call; to parse many
// payloads, build a Parser once with NewParser and call Parser.Hook.
//
// Errors: a *PatternError or a config error for a bad cfg, else those of
// Parser.Hook.
func ParseHook(b []byte, cfg Config) (events.Observation, error) {
	p, err := NewParser(cfg)
	if err != nil {
		return events.Observation{}, err
	}
	return p.Hook(b)
}

// Hook parses one hook stdin payload, b (one JSON object, trailing
// whitespace allowed), following the Claude Code hooks reference of
// v2.1.x: the common fields session_id, transcript_path, cwd,
// permission_mode, hook_event_name (and agent_id, agent_type inside a
// subagent) plus each event's own fields.
//
// The observation has Parser ParserHook, Kind = hook_event_name, Key
// "hook:<event>:<tool_use_id>" when the payload has a tool_use_id, else
// "hook:<event>:sha256:<hex of the payload without trailing whitespace>".
// Two byte-identical payloads without a tool_use_id (two Stop hooks of one
// session in an old version) get the same key; a caller that knows a
// unique arrival id should use Parser.SpooledHook instead. Meta comes from
// session_id, cwd, permission_mode (AgentMode), model, and agent_id and
// agent_type except for SubagentStart and SubagentStop, where they name
// the subagent, not the session the hook runs in. Signals:
//
//	SessionStart        session_start (Name source: startup, resume, clear);
//	                    source compact: compact_end (Name "compact")
//	UserPromptSubmit    prompt (ID prompt_id, Text prompt)
//	PreToolUse          tool_use (ID tool_use_id, Name tool_name, Background
//	                    tool_input.run_in_background, Text: command, path …),
//	                    and question for a tool that BlocksOnUser (Status
//	                    prefilled when tool_input.answers is set)
//	PermissionRequest   permission (ID tool_use_id if present, Name tool_name,
//	                    Text: command, path …)
//	PermissionDenied    tool_result rejected (ID tool_use_id, Name tool_name,
//	                    Text reason, By deniedBy(reason): Claude Code's own
//	                    check refused, not the person)
//	PostToolUse         tool_result (Name tool_name) as for a transcript tool
//	                    result, from tool_response: ok, backgrounded (Task
//	                    backgroundTaskId), interrupted …; then background_done
//	                    when a TaskOutput/BashOutput response reports an end,
//	                    or killed for KillShell/TaskStop (Task: the input's
//	                    shell_id or task_id); for AskUserQuestion, answer
//	                    per answer in tool_response.answers (ID tool_use_id,
//	                    Text the answer)
//	PostToolUseFailure  tool_result error, or interrupted when is_interrupt
//	                    (Name tool_name)
//	Notification        by notification_type (or, when absent, by message):
//	                    permission_prompt: permission (Name: the tool the
//	                    message names); idle_prompt: idle;
//	                    elicitation_dialog: question; others: none
//	SubagentStart       subagent_start (ID agent_id, Name agent_type)
//	SubagentStop        subagent_stop (ID agent_id, Name agent_type)
//	Stop                turn_end (Name "Stop")
//	StopFailure         api_error (Status "failed"), turn_end (Name
//	                    "StopFailure")
//	PreCompact          compact_start (Name trigger)
//	PostCompact         compact_end (Name trigger)
//	SessionEnd          session_end (Text reason)
//	other events        none, and a Problems entry "unknown hook event"
//
// Errors are *HookError values: ErrInvalidUTF8, ErrSyntax or ErrNotObject
// for a payload that is not a JSON object; ErrDuplicateKey for one whose
// top-level object names a member twice; ErrTooDeep or ErrTooManyKeys
// for one over MaxHookDepth or MaxHookKeys; ErrMissingField when
// hook_event_name or session_id is absent or empty; events.ErrMalformed
// (naming the field) when session_id, or agent_id if set, is not a valid
// aggregate id (events.ValidID; "agent-"+agent_id for a subagent);
// ErrSecretID (naming the field and the rule, not the id) when a
// redaction rule matches one of the observation's ids (SecretID);
// ErrFieldType (naming
// the field) when a field this parser reads has the wrong JSON type, e.g.
// "session_id": 5 or "tool_input": "x". Fields of a tool's input or
// response are read leniently: a wrong type there is a Problems entry.
func (p *Parser) Hook(b []byte) (events.Observation, error) {
	b = bytes.TrimRight(b, " \t\r\n")
	o, err := parseHook(b)
	if err != nil {
		return o, err
	}
	if err := SecretID(p.red, o); err != nil {
		return events.Observation{}, &HookError{Event: o.Kind, Err: err}
	}
	return p.finish(o, b), nil
}

// parseHook parses b (trailing whitespace removed) into an observation
// without redaction or Raw.
func parseHook(b []byte) (events.Observation, error) {
	top, event, err := readHook(b)
	if err != nil {
		return events.Observation{}, err
	}
	var probs []string
	t := objectOf(top, &probs)
	o := events.Observation{Parser: ParserHook, Kind: event}
	o.Meta = events.Meta{
		SessionID: t.str("session_id"),
		Cwd:       t.str("cwd"),
		AgentMode: t.str("permission_mode"),
		Model:     t.str("model"),
	}
	if event != "SubagentStart" && event != "SubagentStop" {
		o.Meta.AgentID, o.Meta.AgentType = t.str("agent_id"), t.str("agent_type")
	}
	toolID, tool := t.str("tool_use_id"), t.str("tool_name")
	switch event {
	case "SessionStart":
		if src := t.str("source"); src == "compact" {
			// Fired when a compaction is done (the only end of one before
			// PostCompact, 2.1.76): the same process goes on.
			o.Signals = []events.Sig{{Kind: events.SigCompactEnd, Name: "compact"}}
		} else {
			o.Signals = []events.Sig{{Kind: events.SigSessionStart, Name: src}}
		}
	case "UserPromptSubmit":
		o.Signals = []events.Sig{{Kind: events.SigPrompt, ID: t.str("prompt_id"), Text: t.str("prompt")}}
	case "PreToolUse":
		o.Signals = toolUse(toolID, tool, t, "tool_input")
	case "PermissionRequest":
		in, _ := t.obj("tool_input")
		o.Signals = []events.Sig{{Kind: events.SigPermission, ID: toolID, Name: tool, Text: toolSummary(tool, in)}}
	case "PermissionDenied":
		reason := lenientText(t, "reason")
		o.Signals = []events.Sig{{Kind: events.SigToolResult, ID: toolID, Name: tool, Status: StatusRejected, Text: reason, By: deniedBy(reason)}}
	case "PostToolUse":
		resp := t.raw("tool_response")
		o.Signals = result{id: toolID, content: textOf(resp), detail: resp}.signals()
		o.Signals[0].Name = tool
		if tool == "AskUserQuestion" && o.Signals[0].Status == StatusOK {
			o.Signals = append(o.Signals, answerSigs(toolID, resp)...)
		}
		if tool == "KillShell" || tool == "TaskStop" {
			// The stopping call returned without error: the task it names
			// has ended, whatever the response's wording.
			in, _ := t.obj("tool_input")
			in = in.quiet()
			for _, k := range []string{"task_id", "shell_id", "bash_id"} {
				if id := in.str(k); id != "" && !hasDone(o.Signals, id) {
					o.Signals = append(o.Signals, events.Sig{Kind: events.SigBackgroundDone, Task: id, Status: DoneKilled})
					break
				}
			}
		}
	case "PostToolUseFailure":
		sig := events.Sig{Kind: events.SigToolResult, ID: toolID, Name: tool, Status: StatusError, Text: lenientText(t, "error")}
		if t.boolean("is_interrupt") {
			sig.Status = StatusInterrupted
		}
		o.Signals = []events.Sig{sig}
	case "Notification":
		o.Signals = notification(t.str("notification_type"), t.str("message"))
	case "SubagentStart":
		o.Signals = []events.Sig{{Kind: events.SigSubagentStart, ID: t.str("agent_id"), Name: t.str("agent_type")}}
	case "SubagentStop":
		o.Signals = []events.Sig{{Kind: events.SigSubagentStop, ID: t.str("agent_id"), Name: t.str("agent_type")}}
	case "Stop":
		o.Signals = []events.Sig{{Kind: events.SigTurnEnd, Name: "Stop"}}
	case "StopFailure":
		o.Signals = []events.Sig{
			{Kind: events.SigAPIError, Status: APIErrorFailed, Text: lenientText(t, "error")},
			{Kind: events.SigTurnEnd, Name: "StopFailure"},
		}
	case "PreCompact":
		o.Signals = []events.Sig{{Kind: events.SigCompactStart, Name: t.str("trigger")}}
	case "PostCompact":
		o.Signals = []events.Sig{{Kind: events.SigCompactEnd, Name: t.str("trigger")}}
	case "SessionEnd":
		o.Signals = []events.Sig{{Kind: events.SigSessionEnd, Text: t.str("reason")}}
	default:
		probs = append(probs, fmt.Sprintf("unknown hook event %q", event))
	}
	if toolID != "" {
		o.Key = "hook:" + event + ":" + toolID
	} else {
		sum := sha256.Sum256(b)
		o.Key = "hook:" + event + ":sha256:" + hex.EncodeToString(sum[:])
	}
	if p := events.WorkDirProblem(o.Meta.Cwd); p != "" {
		probs = append(probs, p)
	}
	o.Problems = probs
	if c, ok := t.quiet().obj(CutMember); ok {
		size, _ := strconv.ParseInt(c.number("size"), 10, 64)
		o.Cut = &events.Cut{Size: size, SHA256: c.str("sha256")}
	}
	return o, nil
}

// SpooledHook parses a spooled hook payload like Hook, but keys a payload
// without a tool_use_id by its spool entry: "hook:<event>:spool:<e.ID>",
// and a PermissionRequest without one asks under PermissionID(e.ID) (a
// Notification permission_prompt names no call, and keeps no id: it is a
// notice of a dialog another report may have opened).
// The entry id is unique per hook run and stays the same when delivery of
// the entry is retried, so redelivery is dropped and equal payloads of two
// runs are not.
func (p *Parser) SpooledHook(e Entry) (events.Observation, error) {
	o, err := p.Hook(e.Payload)
	if err != nil {
		return o, fmt.Errorf("spool entry %s: %w", e.ID, err)
	}
	if strings.HasPrefix(o.Key, "hook:"+o.Kind+":sha256:") {
		o.Key = "hook:" + o.Kind + ":spool:" + e.ID
	}
	for i, s := range o.Signals {
		if s.Kind == events.SigPermission && s.ID == "" && o.Kind == "PermissionRequest" {
			// A permission dialog without a tool_use_id is its own: the
			// gate reviews it under the same id (gate.Request.Ref), never
			// under another call's.
			o.Signals[i].ID = PermissionID(e.ID)
		}
	}
	return o, nil
}

// Who refused a call that PermissionDenied reports (Sig.By): Claude
// Code's auto-mode classifier when its reason says so, else its own
// permission check (a rule or a hook: the hook does not say which).
const (
	ByAutoModeClassifier = "claude-code:auto_mode_classifier"
	ByPermissionCheck    = "claude-code:permission_check"
)

// deniedBy names who refused a call PermissionDenied reports, from the
// hook's reason ("Denied by auto mode classifier", …).
func deniedBy(reason string) string {
	if r := strings.ToLower(reason); strings.Contains(r, "classifier") || strings.Contains(r, "auto mode") || strings.Contains(r, "auto-mode") {
		return ByAutoModeClassifier
	}
	return ByPermissionCheck
}

// PermissionID is the review id of a spooled PermissionRequest without a
// tool_use_id: "gate-" and the spool entry's ULID.
func PermissionID(spoolID string) string { return "gate-" + spoolID }

// lenientText returns member key as text: a string, or the message of an
// object ({message} or {error: {message}}), or "".
func lenientText(t object, key string) string {
	q := t.quiet()
	switch jsonKind(q.raw(key)) {
	case "string":
		return q.str(key)
	case "object":
		e, _ := q.obj(key)
		for range 3 {
			if m := e.str("message"); m != "" {
				return m
			}
			next, ok := e.obj("error")
			if !ok {
				break
			}
			e = next
		}
	}
	return ""
}

// hasDone reports whether sigs already report task's end.
func hasDone(sigs []events.Sig, task string) bool {
	for _, s := range sigs {
		if s.Kind == events.SigBackgroundDone && s.Task == task {
			return true
		}
	}
	return false
}

// notification maps a Notification hook by its type or, for versions
// without notification_type, by its message.
func notification(typ, msg string) []events.Sig {
	if typ == "" {
		switch {
		case strings.Contains(msg, "needs your permission"):
			typ = "permission_prompt"
		case strings.Contains(msg, "waiting for your input"):
			typ = "idle_prompt"
		}
	}
	switch typ {
	case "permission_prompt":
		return []events.Sig{{Kind: events.SigPermission, Name: permissionTool(msg), Text: msg}}
	case "idle_prompt":
		return []events.Sig{{Kind: events.SigIdle, Text: msg}}
	case "elicitation_dialog":
		return []events.Sig{{Kind: events.SigQuestion, Text: msg}}
	}
	return nil
}

// permissionTool returns the tool a permission notification names:
// "Claude needs your permission to use Bash" gives "Bash".
func permissionTool(msg string) string {
	const marker = "permission to use "
	i := strings.Index(msg, marker)
	if i < 0 {
		return ""
	}
	name := strings.TrimSpace(msg[i+len(marker):])
	if j := strings.IndexAny(name, " \t\n"); j >= 0 {
		name = name[:j]
	}
	return strings.TrimRight(name, ".,;:!?")
}
