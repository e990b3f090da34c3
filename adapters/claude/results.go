package claude

import (
	"encoding/json"
	"strings"

	"github.com/logbook-dev/logbook/events"
)

// Tool result statuses (Sig.Status of SigToolResult).
const (
	StatusOK           = "ok"
	StatusError        = "error"
	StatusRejected     = "rejected"
	StatusInterrupted  = "interrupted"
	StatusBackgrounded = "backgrounded"
)

// Background task end statuses (Sig.Status of SigBackgroundDone).
const (
	DoneCompleted = "completed"
	DoneFailed    = "failed"
	DoneKilled    = "killed"
)

// API error statuses (Sig.Status of SigAPIError).
const (
	// APIErrorRetrying: Claude Code will retry the request; the turn goes on.
	APIErrorRetrying = "retrying"
	// APIErrorFailed: the request failed for good; the turn ended.
	APIErrorFailed = "failed"
)

// Texts Claude Code writes for a refused or interrupted tool call.
const (
	rejectedResult    = "User rejected tool use"
	rejectedContent   = "The user doesn't want to proceed with this tool use"
	interruptMarker   = "[Request interrupted by user"
	interruptedResult = "The user doesn't want to take this action right now"
	backgroundPrefix  = "Command running in background with ID: "
)

// result describes one tool result: the tool_result block of a transcript
// user line with the line's toolUseResult, or a PostToolUse hook's
// tool_response.
type result struct {
	id      string
	isError bool
	content string          // the text of the result's content
	detail  json.RawMessage // toolUseResult or tool_response; any JSON type
	// read, when set, is detail read as an object already (ok when it
	// is one), so it is not read again.
	read *detailObject
}

// detailObject is a result's detail read as an object.
type detailObject struct {
	o  object
	ok bool
}

// detailObj returns r.detail read as an object, with its problems
// dropped, and whether it is one.
func (r result) detailObj() (object, bool) {
	if r.read != nil {
		return r.read.o.quiet(), r.read.ok
	}
	d, ok := newObject(r.detail, "", new([]string))
	return d.quiet(), ok
}

// signals returns the SigToolResult for r followed by a SigBackgroundDone
// when r reports that a background task ended (TaskOutput, BashOutput).
//
// Status, first match wins: rejected (toolUseResult is "User rejected tool
// use", or the content says the user does not want to proceed);
// backgrounded (a backgroundTaskId, "Command running in background with
// ID: X", or an async subagent launch), Task = the task or agent id;
// interrupted (interrupted: true, or the interrupt texts); error
// (is_error); ok. For a subagent's result (Agent or Task tool) Task is
// the subagent id, agentId.
func (r result) signals() []events.Sig {
	d, isObj := r.detailObj()
	detailStr := ""
	if jsonKind(r.detail) == "string" {
		detailStr = strOf(r.detail)
	}
	content := strings.TrimSpace(r.content)
	sig := events.Sig{Kind: events.SigToolResult, ID: r.id}
	agentID := ""
	if isObj {
		agentID = d.str("agentId")
	}
	switch {
	case detailStr == rejectedResult || strings.HasPrefix(content, rejectedContent):
		sig.Status = StatusRejected
	case isObj && d.str("backgroundTaskId") != "":
		sig.Status, sig.Task = StatusBackgrounded, d.str("backgroundTaskId")
	case strings.HasPrefix(content, backgroundPrefix):
		sig.Status, sig.Task = StatusBackgrounded, leadingID(content[len(backgroundPrefix):])
	case agentID != "" && (d.boolean("isAsync") || d.str("status") == "async_launched"):
		sig.Status, sig.Task = StatusBackgrounded, agentID
	case isObj && d.boolean("interrupted"),
		strings.Contains(detailStr, interruptMarker),
		strings.HasPrefix(content, interruptedResult),
		strings.HasPrefix(content, interruptMarker):
		sig.Status = StatusInterrupted
	case r.isError:
		sig.Status = StatusError
	default:
		sig.Status = StatusOK
	}
	if sig.Task == "" {
		sig.Task = agentID
	}
	if agentID != "" {
		sig.AgentType = d.str("agentType")
	}
	if sig.Status != StatusOK && sig.Status != StatusBackgrounded {
		sig.Text = content
		if sig.Text == "" {
			sig.Text = detailStr
		}
	}
	sigs := []events.Sig{sig}
	if !isObj && strings.HasPrefix(content, "{") {
		// Several results in one line leave no toolUseResult to read; a
		// JSON content (TaskStop, KillShell) says the same.
		if c, ok := newObject(json.RawMessage(content), "", new([]string)); ok {
			d, isObj = c.quiet(), true
		}
	}
	if task, status := taskEnded(d, isObj, content); task != "" {
		sigs = append(sigs, events.Sig{Kind: events.SigBackgroundDone, Task: task, Status: status})
	}
	return sigs
}

// leadingID returns the id at the start of s: letters, digits, '-' and '_'.
func leadingID(s string) string {
	i := 0
	for i < len(s) && isIDByte(s[i]) {
		i++
	}
	return s[:i]
}

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// taskEnded reports a background task that a polling tool (TaskOutput,
// BashOutput) found ended, or that a stopping tool (TaskStop in 2.1.x,
// KillShell in 2.0.x) ended: its id and normalized status, or "" when the
// result says nothing of the kind. It reads, in order, toolUseResult.task
// {task_id, status}, toolUseResult {task_id|taskId|shell_id|shellId|
// bash_id, status} (no status, with a message "Successfully stopped
// task…" or "Successfully killed shell…": killed), and a content that
// starts with a <retrieval_status>, <task_id> or <status> tag and holds
// <task_id>X</task_id> and <status>S</status>.
func taskEnded(d object, isObj bool, content string) (task, status string) {
	if isObj {
		if t, ok := d.obj("task"); ok {
			if id := t.str("task_id"); id != "" {
				if s := doneStatus(t.str("status")); s != "" {
					return id, s
				}
				return "", ""
			}
		}
		for _, k := range []string{"task_id", "taskId", "shell_id", "shellId", "bash_id"} {
			if id := d.str(k); id != "" {
				if s := doneStatus(d.str("status")); s != "" {
					return id, s
				}
				if stopped(d.str("message")) {
					return id, DoneKilled
				}
				return "", ""
			}
		}
	}
	for _, p := range []string{"<retrieval_status>", "<task_id>", "<status>"} {
		if strings.HasPrefix(content, p) {
			id := tag(content, "task_id")
			if s := doneStatus(tag(content, "status")); id != "" && s != "" {
				return id, s
			}
			return "", ""
		}
	}
	return "", ""
}

// stopped reports whether a TaskStop or KillShell result message says the
// task was ended: "Successfully stopped task: X (cmd)" (2.1.x),
// "Successfully killed shell: X (cmd)" (2.0.x).
func stopped(msg string) bool {
	return strings.HasPrefix(msg, "Successfully stopped task") || strings.HasPrefix(msg, "Successfully killed shell")
}

// doneStatus maps a task status onto DoneCompleted, DoneFailed or
// DoneKilled, or "" for a status that is not an end (running, pending) or
// not known.
func doneStatus(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "completed", "complete", "success", "succeeded", "done":
		return DoneCompleted
	case "failed", "error", "errored":
		return DoneFailed
	case "killed", "stopped", "cancelled", "canceled", "terminated":
		return DoneKilled
	}
	return ""
}

// tag returns the trimmed text between the first <name> and </name> in s.
func tag(s, name string) string {
	openTag, closeTag := "<"+name+">", "</"+name+">"
	i := strings.Index(s, openTag)
	if i < 0 {
		return ""
	}
	s = s[i+len(openTag):]
	j := strings.Index(s, closeTag)
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(s[:j])
}

// notifications returns a SigBackgroundDone for each <task-notification>
// in s that names a <task-id> and an ended <status>.
func notifications(s string) []events.Sig {
	const openTag, closeTag = "<task-notification>", "</task-notification>"
	var sigs []events.Sig
	for {
		i := strings.Index(s, openTag)
		if i < 0 {
			return sigs
		}
		s = s[i+len(openTag):]
		body := s
		if j := strings.Index(s, closeTag); j >= 0 {
			body, s = s[:j], s[j+len(closeTag):]
		} else {
			s = ""
		}
		id, status := tag(body, "task-id"), doneStatus(tag(body, "status"))
		if id != "" && status != "" {
			sigs = append(sigs, events.Sig{Kind: events.SigBackgroundDone, Task: id, Status: status, Text: tag(body, "summary")})
		}
	}
}

// toolSummary returns a short description of a tool call for Sig.Text:
// the command, path, pattern, URL, query or description the input names.
func toolSummary(name string, input object) string {
	in := input.quiet()
	switch name {
	case "AskUserQuestion":
		for _, q := range in.arr("questions") {
			if qo, ok := newObject(q, "", new([]string)); ok {
				if s := qo.quiet().str("question"); s != "" {
					return s
				}
			}
		}
	}
	for _, k := range []string{"command", "file_path", "notebook_path", "path", "pattern", "url", "query", "description", "prompt", "task_id", "bash_id", "shell_id", "skill", "plan"} {
		if s := in.str(k); s != "" {
			return s
		}
	}
	return ""
}

// answerSigs returns an answer signal for each answer in detail, the
// result of an AskUserQuestion call with id (toolUseResult or
// tool_response, 2.0.x and 2.1.x: {questions: [{question, …}], answers:
// {<question>: <answer>}}), in the order of the questions. Text is the
// answer alone (the option chosen, several joined by ", ", or what the
// user typed), never the question. Anything else yields none: a result
// that is not an object, answers that are not strings, an answer to no
// question listed. Only the session's own question call with id makes
// an answer the user's (the gate checks that; see adapters/gate).
func answerSigs(id string, detail json.RawMessage) []events.Sig {
	return result{id: id, detail: detail}.answers()
}

// answers is answerSigs of r's id and detail.
func (r result) answers() []events.Sig {
	id := r.id
	d, ok := r.detailObj()
	if !ok || id == "" {
		return nil
	}
	ans, ok := d.obj("answers")
	if !ok {
		return nil
	}
	ans = ans.quiet()
	var sigs []events.Sig
	seen := map[string]bool{}
	for _, q := range d.arr("questions") {
		qo, ok := newObject(q, "", new([]string))
		if !ok {
			continue
		}
		text := qo.quiet().str("question")
		if text == "" || seen[text] {
			continue
		}
		seen[text] = true
		if a := strings.TrimSpace(ans.str(text)); a != "" {
			sigs = append(sigs, events.Sig{Kind: events.SigAnswer, ID: id, Name: "AskUserQuestion", Text: a})
		}
	}
	return sigs
}
