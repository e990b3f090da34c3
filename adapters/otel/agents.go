package otel

import (
	"fmt"
	"slices"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/events"
)

// Sources of what this file knows of the agents' telemetry:
//
//	[MON] Claude Code, "Monitoring" (code.claude.com/docs/en/monitoring-usage):
//	      the events, their attributes, the standard attributes; "Traces
//	      (beta)": the spans, their hierarchy and attributes.
//	[CL]  Claude Code's changelog: 2.1.119 tool_use_id; 2.1.122 numbers
//	      of api_request and api_error sent as numbers, not strings.
//	[DOC] Codex CLI, docs/config.md "Observability and telemetry"
//	      (openai/codex), checked against codex-rs/otel/src/events/
//	      session_telemetry.rs.

// claudeEvents are Claude Code's documented log events [MON]; a record
// of another claude_code. name is kept with a Problems entry.
var claudeEvents = []string{
	"claude_code.user_prompt", "claude_code.tool_result", "claude_code.api_request", "claude_code.api_error",
	"claude_code.tool_decision", "claude_code.assistant_response", "claude_code.api_refusal",
	"claude_code.api_request_body", "claude_code.api_response_body", "claude_code.permission_mode_changed",
	"claude_code.auth", "claude_code.mcp_server_connection", "claude_code.internal_error",
	"claude_code.plugin_installed", "claude_code.plugin_loaded", "claude_code.skill_activated",
	"claude_code.at_mention", "claude_code.api_retries_exhausted", "claude_code.compaction",
	"claude_code.subagent_completed", "claude_code.feedback_survey", "claude_code.retention_sweep",
}

// claudeSpans are Claude Code's documented spans [MON] "Traces (beta)",
// sent with CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1 and
// OTEL_TRACES_EXPORTER=otlp; a span of another claude_code. name is kept
// with a Problems entry.
var claudeSpans = []string{
	"claude_code.interaction", "claude_code.llm_request", "claude_code.tool",
	"claude_code.tool.blocked_on_user", "claude_code.tool.execution", "claude_code.hook",
}

// codexEvents are Codex CLI's documented log events [DOC].
var codexEvents = []string{
	"codex.conversation_starts", "codex.api_request", "codex.sse_event", "codex.user_prompt",
	"codex.tool_decision", "codex.tool_result", "codex.websocket_connect", "codex.websocket_request",
	"codex.auth_recovery", "codex.sandbox_outcome", "codex.startup_phase", "codex.turn_ttft",
}

// known reports whether kind is an event name this package knows (its
// Kind is kept as it is; another is redacted like any text).
func known(kind string) bool {
	return slices.Contains(claudeEvents, kind) || slices.Contains(codexEvents, kind) || slices.Contains(claudeSpans, kind) ||
		len(kind) > len("claude_code.hook_") && kind[:len("claude_code.hook_")] == "claude_code.hook_"
}

// byPermissionCheck is who refused a call that Claude Code's own
// configuration or a hook refused (adapters/claude's ByPermissionCheck,
// kept equal).
const byPermissionCheck = "claude-code:permission_check"

// redactedPrompt is what Claude Code and Codex CLI send for a prompt's
// text when its logging is off [MON] ("<REDACTED>"), [DOC] ("[REDACTED]").
func redactedPrompt(s string) bool { return s == "<REDACTED>" || s == "[REDACTED]" }

// claudeSignals maps a Claude Code event [MON] to signals:
//
//	user_prompt    prompt (ID prompt.id, the id the UserPromptSubmit hook
//	               names as prompt_id; Text prompt, when
//	               OTEL_LOG_USER_PROMPTS sends it)
//	tool_decision  accept: tool_use (ID tool_use_id, Name tool_name);
//	               reject: tool_use and tool_result rejected, By
//	               claude-code:permission_check when source is config or
//	               hook, else the person; none without tool_use_id
//	               (before 2.1.119 [CL]), with a Problems entry
//	tool_result    tool_use and tool_result (ok when success is "true",
//	               else error, Text error_type); without tool_use_id, both
//	               without an id (the reducer pairs them by tool)
//	api_request    usage (Request request_id; Model model; input_tokens,
//	               output_tokens, cache_read_tokens, cache_creation_tokens;
//	               speed "fast" as ServiceTier "speed-fast", as the
//	               transcript's usage.speed is); a count of the wrong type
//	               refuses the reading with a Problems entry; none for a
//	               subagent's request (subagentRequest)
//	api_error      api_error (Text "<status_code>: <error>")
//	others known   none: kept for the record
//	unknown        none, and a Problems entry
func claudeSignals(name string, a attrs, probs *[]string) []events.Sig {
	tool, _ := a.str("tool_name", probs)
	id, _ := a.str("tool_use_id", probs)
	switch name {
	case "claude_code.user_prompt":
		pid, _ := a.str("prompt.id", probs)
		text, _ := a.str("prompt", probs)
		if redactedPrompt(text) {
			text = ""
		}
		if pid == "" {
			// No prompt.id: nothing tells it from the hook's or the
			// transcript's report of the same prompt, so it opens a
			// turn only when none is open.
			return []events.Sig{{Kind: events.SigPrompt, Text: text, Status: events.PromptInTurn}}
		}
		return []events.Sig{{Kind: events.SigPrompt, ID: pid, Text: text}}
	case "claude_code.tool_decision":
		if id == "" {
			*probs = append(*probs, "tool_decision without tool_use_id (Claude Code before 2.1.119): decides nothing")
			return nil
		}
		use := events.Sig{Kind: events.SigToolUse, ID: id, Name: tool}
		decision, _ := a.str("decision", probs)
		switch decision {
		case "accept":
			return []events.Sig{use}
		case "reject":
			source, _ := a.str("source", probs)
			res := events.Sig{Kind: events.SigToolResult, ID: id, Name: tool, Status: events.OutcomeRejected, Text: "rejected (" + source + ")"}
			if source == "config" || source == "hook" {
				res.By = byPermissionCheck
			}
			return []events.Sig{use, res}
		}
		*probs = append(*probs, fmt.Sprintf("attribute \"decision\": %q is neither accept nor reject", decision))
		return nil
	case "claude_code.tool_result":
		res := events.Sig{Kind: events.SigToolResult, ID: id, Name: tool, Status: events.OutcomeOK}
		ok, present := a.boolean("success")
		if !present {
			*probs = append(*probs, `attribute "success": want "true" or "false"`)
		}
		if present && !ok {
			res.Status = events.OutcomeError
			res.Text, _ = a.str("error_type", probs)
		}
		return []events.Sig{{Kind: events.SigToolUse, ID: id, Name: tool}, res}
	case "claude_code.api_request":
		model, _ := a.str("model", probs)
		u := events.Usage{Model: model}
		for _, f := range []struct {
			key string
			dst *int64
		}{{"input_tokens", &u.Input}, {"output_tokens", &u.Output}, {"cache_read_tokens", &u.CacheRead}, {"cache_creation_tokens", &u.CacheWrite}} {
			n, why := a.count(f.key)
			if why != "" {
				*probs = append(*probs, fmt.Sprintf(ingest.UsageRefused+"attribute %q: %s", f.key, why))
				return nil
			}
			*f.dst = n
		}
		if speed, _ := a.str("speed", probs); speed == "fast" {
			u.ServiceTier = "speed-fast"
		}
		if u.Total() == 0 || subagentRequest(a, probs) {
			return nil
		}
		req, _ := a.str("request_id", probs)
		return []events.Sig{{Kind: events.SigUsage, Request: req, Usage: &u}}
	case "claude_code.api_error":
		text, _ := a.str("error", probs)
		if code, _ := a.str("status_code", probs); code != "" {
			text = code + ": " + text
		}
		return []events.Sig{{Kind: events.SigAPIError, Text: text}}
	}
	if !known(name) {
		*probs = append(*probs, fmt.Sprintf("unknown event %q", name))
	}
	return nil
}

// claudeSpanSignals maps a Claude Code span [MON] "Traces (beta)" to
// signals. A span is sent once it ends, so each tells of something over:
//
//	interaction           two observations. Its end: turn_end (Name
//	                      "interaction"), dated by the span's end: the
//	                      root span of one prompt, "from receiving a
//	                      prompt to producing a response", ends with its
//	                      turn; the same signal as the Stop hook, so the
//	                      same reducer makes the session ready. Its
//	                      start (interactionStart): a prompt with Status
//	                      PromptInTurn, dated by the span's start, which
//	                      opens the turn only when none is open (the
//	                      span names no prompt.id, which the docs give
//	                      to events only, so the turn's user_prompt
//	                      event or UserPromptSubmit hook is its prompt
//	                      when it came first). Claude Code's events and
//	                      spans go in batches of their own, so either
//	                      may come first: the reducer (reducers/session)
//	                      takes a report dated within a turn already
//	                      ended as late, and an end or an in-turn prompt
//	                      dated before the open turn began as an earlier
//	                      turn's, ending nothing.
//	llm_request           none: its token counts are the api_request
//	                      event's and the transcript's of the same
//	                      request_id, and the docs do not say that every
//	                      span carries request_id, so usage stays theirs
//	                      and is never counted a third time.
//	tool, tool.*          none: tool_decision and tool_result events and
//	                      the tool hooks report the call by tool_use_id.
//	hook                  none (detailed beta tracing only).
//	unknown claude_code.* none, and a Problems entry.
//
// Every span carries the standard attributes (session.id, app.version)
// and span.type [MON]; the docs are silent on the attributes' value
// types, on the interaction's status when a turn is interrupted (they
// say the spans other than llm_request, tool.execution and hook "always
// end with status UNSET"), and on the instrumentation scope's name, so
// none of those is read.
func claudeSpanSignals(name string, _ attrs, probs *[]string) []events.Sig {
	switch name {
	case interaction:
		return []events.Sig{{Kind: events.SigTurnEnd, Name: "interaction"}}
	}
	if !slices.Contains(claudeSpans, name) {
		*probs = append(*probs, fmt.Sprintf("unknown span %q", name))
	}
	return nil
}

// subagentRequest reports whether an api_request event is a subagent's:
// its query_source is "subagent" (the category the cost and token
// metrics name [MON] "Cost counter") or it names agent.name ("Subagent
// type that issued the request", absent otherwise [MON]). Such an event
// carries its parent's session.id, while the subagent's transcript
// (subagents/agent-<agentId>.jsonl) is a session of its own, the
// parent's child, with the same request id: the two sessions cannot see
// each other's readings, so the request's usage is the subagent
// session's alone, and the event, kept, adds none to the parent. The
// events name no agent id to place it on the subagent's session; without
// that transcript a subagent's requests are not counted. The event's
// query_source may also be "a subagent name" [MON]: without agent.name,
// such a value is not told from the main thread's and counts on the
// parent.
func subagentRequest(a attrs, probs *[]string) bool {
	source, _ := a.str("query_source", probs)
	agent, _ := a.str("agent.name", probs)
	return source == "subagent" || agent != ""
}

// interaction is the name of Claude Code's root span of one prompt.
const interaction = "claude_code.interaction"

// interactionStart gives the signal of an interaction span's start: a
// prompt in the turn (see claudeSpanSignals).
func interactionStart(string, attrs, *[]string) []events.Sig {
	return []events.Sig{{Kind: events.SigPrompt, Status: events.PromptInTurn}}
}

// codexSignals maps a Codex CLI event [DOC] to signals:
//
//	conversation_starts  session_start (Name "otel": it ends no open turn)
//	user_prompt          prompt (Text prompt, unless "[REDACTED]"),
//	                     events.PromptInTurn: it names no id, so it opens
//	                     a turn only when none is open
//	tool_decision        approved, approved_for_session,
//	                     approved_execpolicy_amendment: tool_use (ID
//	                     call_id, Name tool_name); denied, abort: tool_use
//	                     and tool_result rejected
//	tool_result          tool_use and tool_result (ok when success is
//	                     "true", else error)
//	others known         none: kept for the record (sse_event's token
//	                     counts name no call a rollout names, so the
//	                     rollout's totals stay the one count of usage)
//	unknown              none, and a Problems entry
func codexSignals(name string, a attrs, probs *[]string) []events.Sig {
	tool, _ := a.str("tool_name", probs)
	id, _ := a.str("call_id", probs)
	switch name {
	case "codex.conversation_starts":
		return []events.Sig{{Kind: events.SigSessionStart, Name: "otel"}}
	case "codex.user_prompt":
		text, _ := a.str("prompt", probs)
		if redactedPrompt(text) {
			text = ""
		}
		// Codex CLI names no prompt id, so this prompt cannot be told
		// from the rollout's report of it: it opens a turn only when
		// none is open (events.PromptInTurn).
		return []events.Sig{{Kind: events.SigPrompt, Text: text, Status: events.PromptInTurn}}
	case "codex.tool_decision":
		use := events.Sig{Kind: events.SigToolUse, ID: id, Name: tool}
		decision, _ := a.str("decision", probs)
		switch decision {
		case "approved", "approved_for_session", "approved_execpolicy_amendment":
			return []events.Sig{use}
		case "denied", "abort":
			return []events.Sig{use, {Kind: events.SigToolResult, ID: id, Name: tool, Status: events.OutcomeRejected, Text: decision}}
		}
		*probs = append(*probs, fmt.Sprintf("attribute \"decision\": %q is not a decision Codex CLI documents", decision))
		return nil
	case "codex.tool_result":
		res := events.Sig{Kind: events.SigToolResult, ID: id, Name: tool, Status: events.OutcomeOK}
		if ok, present := a.boolean("success"); !present {
			*probs = append(*probs, `attribute "success": want "true" or "false"`)
		} else if !ok {
			res.Status = events.OutcomeError
		}
		return []events.Sig{{Kind: events.SigToolUse, ID: id, Name: tool}, res}
	}
	if !known(name) {
		*probs = append(*probs, fmt.Sprintf("unknown event %q", name))
	}
	return nil
}
