package claude

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/events"
)

// ParseLine parses line number line (1-based) of the transcript at path,
// b, following the Claude Code transcript JSON Lines format of v2.1.x (see
// the package doc). It compiles cfg on every call; to parse many lines,
// build a Parser once with NewParser and call Parser.Line.
//
// Errors: a *PatternError or a config error for a bad cfg, else those of
// Parser.Line.
func ParseLine(path string, line int, b []byte, cfg Config) (events.Observation, error) {
	p, err := NewParser(cfg)
	if err != nil {
		return events.Observation{}, err
	}
	return p.Line(path, line, b)
}

// Line parses line number n (1-based) of the transcript at path, b, with
// or without its trailing newline, following the Claude Code transcript
// JSON Lines format of v2.1.x.
//
// The observation has Key "line:<n>" (stable: a line number names one line
// of one transcript, and one transcript feeds one session aggregate),
// Parser ParserLine, Path, Line, Kind (the line's "type", with the subtype
// for system and attachment lines: "system/compact_boundary",
// "attachment/queued_command"), UUID, ParentUUID (parentUuid, else
// logicalParentUuid), AgentTime (timestamp, verbatim), Meta (sessionId,
// agentId, cwd, version, gitBranch; permissionMode as AgentMode; the
// assistant's model unless it is "<synthetic>"; ai-title and custom-title as
// Title) and Signals:
//
//	user, isCompactSummary           compact_end
//	user, isMeta                     none
//	user, "[Request interrupted by user…"  interrupt (Name "tool_use" for the
//	                                 "… for tool use" form)
//	user, <task-notification> text   background_done per notification
//	user, slash command or local command record (<command-name>,
//	      <local-command-stdout>, <bash-input>, …)  none
//	user, other text or images       prompt (ID promptId, Text the prompt)
//	user, tool_result blocks         tool_result per block (ID tool_use_id,
//	                                 Status ok|error|rejected|interrupted|
//	                                 backgrounded, Task: background task id, or
//	                                 the subagent id of an Agent/Task result),
//	                                 then background_done when a TaskOutput or
//	                                 BashOutput result reports an ended task;
//	                                 an ok result whose toolUseResult has the
//	                                 shape of AskUserQuestion's adds answer per
//	                                 answer (ID tool_use_id, Text the answer);
//	                                 an interrupt marker in the same message
//	                                 adds interrupt
//	assistant, isApiErrorMessage     api_error (Status "failed"), turn_end
//	                                 (Name "api_error")
//	assistant, per content block     thinking|redacted_thinking: thinking;
//	                                 text: text (Text: head … tail);
//	                                 tool_use: tool_use (ID, Name, Background =
//	                                 input.run_in_background, Text: command,
//	                                 path or query), and question too for a
//	                                 tool that BlocksOnUser (Status prefilled
//	                                 when input.answers is set); server-side tool blocks:
//	                                 none
//	assistant, message.usage         usage (ID message.id, Usage: tokens of
//	                                 the model; see usageSig), last
//	assistant, stop_reason end_turn  turn_end (Name "end_turn") after the
//	                                 blocks, unless the line's last block is
//	                                 thinking: Claude Code repeats the
//	                                 message's stop_reason on every line of a
//	                                 streamed message, and a thinking block is
//	                                 never a turn's last
//	system/compact_boundary          compact_end (Name: trigger)
//	system/turn_duration             turn_end (Name "turn_duration")
//	system/api_error                 api_error (Status "retrying")
//	permission-mode                  mode (Name permissionMode)
//	queue-operation enqueue, attachment/queued_command with
//	      <task-notification>        background_done (Task, Status
//	                                 completed|failed|killed)
//	other known types                none
//	unknown type                     none, and a Problems entry
//
// A member of an unexpected JSON type yields a Problems entry, not an
// error. Raw, Sig texts and Meta are redacted; Raw is then cut to the cap
// (Config.MaxRaw) on a rune boundary, with Cut holding the original
// line's length and SHA-256 (before redaction, without its newline);
// signals always come from the whole line.
//
// Errors are *LineError values naming path and n: ErrInvalidUTF8 (Col is
// the first bad byte), ErrSyntax (Col is where the JSON parser stopped),
// ErrNotObject, ErrDuplicateKey (a member named twice in one object, at
// any depth: its path), or ErrSecretID when a redaction rule matches one of the
// line's ids (SecretID; ids are never redacted). With an error the observation is still returned, with Kind
// "invalid", no signals, Raw (invalid bytes replaced by U+FFFD) and the
// error in Problems, so an importer can record the line and keep its line
// cursor dense.
func (p *Parser) Line(path string, n int, b []byte) (events.Observation, error) {
	b = trimEOL(b)
	o := events.Observation{Key: "line:" + strconv.Itoa(n), Parser: ParserLine, Path: path, Line: n}
	var probs []string
	d := lineDocs.Get().(*jsonx.Doc)
	defer func() {
		d.Reset()
		if d.Room() <= maxPooledDoc {
			lineDocs.Put(d)
		}
	}()
	t, col, err := lineObject(b, d, &probs)
	if err != nil {
		lerr := &LineError{Path: path, Line: n, Col: col, Err: err}
		o.Kind = "invalid"
		o.Problems = []string{fmt.Sprintf("line %d:%d: %v", n, col, err)}
		return p.finish(o, b), lerr
	}
	typ := t.str("type")
	o.Kind = typ
	o.UUID = t.str("uuid")
	o.ParentUUID = t.str("parentUuid")
	if o.ParentUUID == "" {
		o.ParentUUID = t.str("logicalParentUuid")
	}
	o.AgentTime = t.str("timestamp")
	o.Meta = events.Meta{
		SessionID: t.str("sessionId"),
		AgentID:   t.str("agentId"),
		Cwd:       t.str("cwd"),
		Version:   t.str("version"),
		GitBranch: t.str("gitBranch"),
		AgentMode: t.str("permissionMode"),
	}
	var sigs []events.Sig
	switch typ {
	case "user":
		sigs = userLine(t)
	case "assistant":
		sigs = assistantLine(t, &o.Meta)
	case "system":
		sub := t.str("subtype")
		if sub != "" {
			o.Kind = "system/" + sub
		}
		sigs = systemLine(t, sub)
	case "attachment":
		if a, ok := t.obj("attachment"); ok {
			at := a.str("type")
			if at != "" {
				o.Kind = "attachment/" + at
			}
			if at == "queued_command" {
				text := a.str("prompt")
				if text == "" {
					text = textOf(a.raw("content"))
				}
				sigs = notifications(text)
			}
		}
	case "queue-operation":
		if t.str("operation") == "enqueue" {
			sigs = notifications(textOf(t.raw("content")))
		}
	case "permission-mode":
		if m := t.str("permissionMode"); m != "" {
			sigs = []events.Sig{{Kind: events.SigMode, Name: m}}
		}
	case "ai-title":
		o.Meta.Title = t.str("aiTitle")
	case "custom-title":
		o.Meta.Title = t.str("customTitle")
	case "summary", "file-history-snapshot", "last-prompt", "progress", "mode",
		"agent-name", "pr-link", "worktree-state", "tag":
		// Recorded, no signal.
	case "":
		o.Kind = "untyped"
		probs = append(probs, `line has no "type"`)
	default:
		probs = append(probs, fmt.Sprintf("unknown line type %q", typ))
	}
	if pr := ingest.SessionIDProblem("sessionId", o.Meta.SessionID); pr != "" {
		// It would be the session's agent_session_id.
		probs = append(probs, pr)
		o.Meta.SessionID = ""
	}
	o.Signals = sigs
	if p := events.WorkDirProblem(o.Meta.Cwd); p != "" {
		probs = append(probs, p)
	}
	o.Problems = probs
	if err := SecretID(p.red, o); err != nil {
		// Recorded as an invalid line: no ids, no signals.
		lerr := &LineError{Path: path, Line: n, Err: err}
		o = events.Observation{Key: o.Key, Parser: o.Parser, Path: path, Line: n, Kind: "invalid",
			Problems: []string{fmt.Sprintf("line %d: %v", n, err)}}
		return p.finish(o, b), lerr
	}
	return p.finish(o, b), nil
}

// localPrefixes start user lines that record a slash command or a local
// command and its output rather than a prompt to the model.
func localPrefixes() []string {
	return []string{
		"<command-name>", "<command-message>", "<command-args>",
		"<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
		"<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user-memory-input>",
	}
}

func userLine(t object) []events.Sig {
	if t.boolean("isCompactSummary") {
		return []events.Sig{{Kind: events.SigCompactEnd, Name: "summary"}}
	}
	if t.boolean("isMeta") {
		return nil
	}
	msg, ok := t.obj("message")
	if !ok {
		return nil
	}
	promptID := t.str("promptId")
	content := msg.raw("content")
	switch k := jsonKind(content); k {
	case "string":
		return userText(msg.str("content"), promptID, false)
	case "array":
	case "null", "nothing":
		return nil
	default:
		msg.problem("content", "string or array", k)
		return nil
	}
	var (
		sigs    []events.Sig
		results []result
		texts   []string
		media   bool
	)
	for b := range msg.objects("content") {
		switch b.str("type") {
		case "tool_result":
			results = append(results, result{
				id:      b.str("tool_use_id"),
				isError: b.boolean("is_error"),
				content: textOf(b.raw("content")),
			})
		case "text":
			texts = append(texts, b.str("text"))
		case "image", "document":
			media = true
		}
	}
	if len(results) == 1 {
		// toolUseResult describes the line's tool result; with several
		// results in one line it cannot be told whose it is.
		key := "toolUseResult"
		results[0].detail = t.raw(key)
		if results[0].detail == nil {
			key = "tool_use_result"
			results[0].detail = t.raw(key)
		}
		d, ok := t.quiet().obj(key)
		results[0].read = &detailObject{o: d, ok: ok}
	}
	for _, r := range results {
		rs := r.signals()
		sigs = append(sigs, rs...)
		if rs[0].Status == StatusOK {
			sigs = append(sigs, r.answers()...)
		}
	}
	text := strings.Join(texts, "\n")
	if len(results) > 0 {
		for _, s := range texts {
			sigs = append(sigs, userText(s, "", true)...)
		}
		return sigs
	}
	sigs = userText(text, promptID, false)
	if sigs == nil && media {
		sigs = []events.Sig{{Kind: events.SigPrompt, ID: promptID}}
	}
	return sigs
}

// userText returns the signals of a user's text: an interrupt, task
// notifications, nothing for a local command record, else a prompt. With
// onlyInterrupt (text beside tool results) only an interrupt counts.
func userText(s, promptID string, onlyInterrupt bool) []events.Sig {
	trimmed := strings.TrimSpace(s)
	if strings.HasPrefix(trimmed, interruptMarker) {
		sig := events.Sig{Kind: events.SigInterrupt, Text: trimmed}
		if strings.Contains(trimmed, "for tool use") {
			sig.Name = "tool_use"
		}
		return []events.Sig{sig}
	}
	if onlyInterrupt || trimmed == "" {
		return nil
	}
	if strings.Contains(trimmed, "<task-notification>") {
		return notifications(trimmed)
	}
	for _, p := range localPrefixes() {
		if strings.HasPrefix(trimmed, p) {
			return nil
		}
	}
	return []events.Sig{{Kind: events.SigPrompt, ID: promptID, Text: trimmed}}
}

func assistantLine(t object, meta *events.Meta) []events.Sig {
	msg, _ := t.obj("message")
	if m := msg.str("model"); !strings.HasPrefix(m, "<") {
		meta.Model = m
	}
	if t.boolean("isApiErrorMessage") {
		text := textOf(msg.raw("content"))
		if text == "" {
			text = t.str("error")
		}
		return []events.Sig{
			{Kind: events.SigAPIError, Status: APIErrorFailed, Text: text},
			{Kind: events.SigTurnEnd, Name: "api_error"},
		}
	}
	var sigs []events.Sig
	last := ""
	content := msg.raw("content")
	switch k := jsonKind(content); k {
	case "string":
		if s := msg.str("content"); strings.TrimSpace(s) != "" {
			sigs = append(sigs, events.Sig{Kind: events.SigText, Text: s})
		}
		last = "text"
	case "array":
		for b := range msg.objects("content") {
			bt := b.str("type")
			last = bt
			switch bt {
			case "thinking", "redacted_thinking":
				sigs = append(sigs, events.Sig{Kind: events.SigThinking})
			case "text":
				if s := b.str("text"); strings.TrimSpace(s) != "" {
					sigs = append(sigs, events.Sig{Kind: events.SigText, Text: s})
				}
			case "tool_use":
				sigs = append(sigs, toolUse(b.str("id"), b.str("name"), b, "input")...)
			case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
				"mcp_tool_use", "mcp_tool_result", "code_execution_tool_result",
				"bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
				"tool_search_tool_result", "container_upload", "image", "document":
				// Run and answered within the API call: no entry to open.
			default:
				*t.Probs = append(*t.Probs, fmt.Sprintf("unknown content block type %q", bt))
			}
		}
	case "null", "nothing":
	default:
		msg.problem("content", "array", k)
	}
	if msg.str("stop_reason") == "end_turn" && last != "thinking" && last != "redacted_thinking" {
		sigs = append(sigs, events.Sig{Kind: events.SigTurnEnd, Name: "end_turn"})
	}
	if u, ok := msg.obj("usage"); ok && !strings.HasPrefix(msg.str("model"), "<") {
		if sig, ok := usageSig(u, msg.str("id"), meta.Model, t.Probs); ok {
			// The line's requestId names the API call, as the
			// api_request telemetry event's request_id does: the reducer
			// counts the call once from either.
			sig.Request = t.quiet().str("requestId")
			// A line a fork of a session copied from it (forkedFrom)
			// reports a call spent there: the reducer keeps it apart.
			if f, ok := t.quiet().obj("forkedFrom"); ok {
				if from := f.quiet().str("sessionId"); from != "" {
					if pr := ingest.SessionIDProblem("forkedFrom.sessionId", from); pr != "" {
						*t.Probs = append(*t.Probs, pr+"; its usage is counted as the session's own")
					} else {
						sig.Usage.CopiedFrom = from
					}
				}
			}
			sigs = append(sigs, sig)
		}
	}
	return sigs
}

// UsageRefused begins the Problems entry of a line whose usage the
// parser refused (ingest.UsageRefused): the line is recorded and its
// usage counts nothing.
const UsageRefused = ingest.UsageRefused

// usageSig returns the usage signal of an assistant message's usage
// object (Claude Code v2.1.x: input_tokens, output_tokens,
// cache_creation_input_tokens, cache_read_input_tokens,
// cache_creation.ephemeral_1h_input_tokens as CacheWrite1h, a service
// tier, speed or region billed otherwise as ServiceTier: billingTier),
// with ID the
// message id: Claude Code writes a message that has several content
// blocks on several lines, each with the message's usage, and the reducer
// counts one message id once. A field that is not a whole number from 0
// to events.MaxUsageTokens, or input_tokens or output_tokens absent or
// null, refuses the reading: no signal, and a Problems entry (UsageRefused)
// naming the field (the line itself is still recorded). An absent cache
// count is 0.
func usageSig(u object, id, model string, probs *[]string) (events.Sig, bool) {
	var out events.Usage
	for _, f := range []struct {
		key string
		dst *int64
	}{
		{"input_tokens", &out.Input}, {"output_tokens", &out.Output},
		{"cache_creation_input_tokens", &out.CacheWrite}, {"cache_read_input_tokens", &out.CacheRead},
	} {
		v, why := ingest.TokenCount(u.raw(f.key))
		if why == "" && (f.key == "input_tokens" || f.key == "output_tokens") && ingest.IsAbsent(u.raw(f.key)) {
			why = "missing" // every reading carries both; cache counts may be absent (0)
		}
		if why != "" {
			*probs = append(*probs, fmt.Sprintf(UsageRefused+"field %q: %s", u.at(f.key), why))
			return events.Sig{}, false
		}
		*f.dst = v
	}
	// cache_creation {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}
	// splits cache_creation_input_tokens by lifetime (Claude Code 2.1,
	// Messages API usage); the one-hour part is billed at 2x input.
	if cc, ok := u.quiet().obj("cache_creation"); ok {
		v, why := ingest.TokenCount(cc.raw("ephemeral_1h_input_tokens"))
		if why != "" {
			*probs = append(*probs, fmt.Sprintf(UsageRefused+"field %q: %s", cc.at("ephemeral_1h_input_tokens"), why))
			return events.Sig{}, false
		}
		if v > out.CacheWrite {
			// An older writer that left cache_creation_input_tokens out.
			if ingest.IsAbsent(u.raw("cache_creation_input_tokens")) {
				out.CacheWrite = v
			} else {
				*probs = append(*probs, fmt.Sprintf(UsageRefused+"field %q: %d over cache_creation_input_tokens %d", cc.at("ephemeral_1h_input_tokens"), v, out.CacheWrite))
				return events.Sig{}, false
			}
		}
		out.CacheWrite1h = v
	}
	out.ServiceTier = billingTier(u.quiet())
	out.Model = model
	if out.Total() == 0 {
		return events.Sig{}, false
	}
	return events.Sig{Kind: events.SigUsage, ID: id, Usage: &out}, true
}

// billingTier returns what of a usage object bills a call otherwise than
// the standard rates, as events.Usage.ServiceTier: its service_tier other
// than "standard", "speed-<speed>" for a speed other than "standard"
// (fast mode), and "geo-<inference_geo>" for a region other than "",
// "global" or "not_available" (US-only inference), joined by "+"; "" when
// none (Claude Code 2.1, Messages API usage). A price table prices such a
// tier only where it names it: otherwise the call has no price, never the
// standard one.
func billingTier(u object) string {
	var parts []string
	if t := u.str("service_tier"); t != "" && t != "standard" {
		parts = append(parts, t)
	}
	if s := u.str("speed"); s != "" && s != "standard" {
		parts = append(parts, "speed-"+s)
	}
	if g := u.str("inference_geo"); g != "" && g != "global" && g != "not_available" {
		parts = append(parts, "geo-"+g)
	}
	return strings.Join(parts, "+")
}

// toolUse returns the tool_use signal of a call to name with id, whose
// input is member inKey of o, and a question signal for AskUserQuestion.
func toolUse(id, name string, o object, inKey string) []events.Sig {
	in, _ := o.obj(inKey)
	sig := events.Sig{Kind: events.SigToolUse, ID: id, Name: name, Text: toolSummary(name, in)}
	if name == "Agent" || name == "Task" {
		sig.AgentType = in.str("subagent_type")
	}
	if r := in.raw("run_in_background"); r != nil {
		sig.Background = in.boolean("run_in_background")
	}
	sigs := []events.Sig{sig}
	if BlocksOnUser(name) {
		q := events.Sig{Kind: events.SigQuestion, ID: id, Name: name, Text: sig.Text}
		if in.raw("answers") != nil {
			// The model filled in answers itself: a result's answers
			// may be its own words.
			q.Status = events.QuestionPrefilled
		}
		sigs = append(sigs, q)
	}
	return sigs
}

// BlocksOnUser reports whether Claude Code's tool name, once called, shows
// a dialog and waits for the user's answer before it returns:
// AskUserQuestion (the model's multiple-choice question, 2.0.x and 2.1.x)
// and ExitPlanMode (the plan-approval dialog in plan mode). A call to one
// of them yields a question signal beside its tool_use, so the session
// waits while the call is open.
func BlocksOnUser(name string) bool {
	switch name {
	case "AskUserQuestion", "ExitPlanMode":
		return true
	}
	return false
}

func systemLine(t object, sub string) []events.Sig {
	switch sub {
	case "compact_boundary":
		trigger := ""
		if m, ok := t.obj("compactMetadata"); ok {
			trigger = m.str("trigger")
		}
		return []events.Sig{{Kind: events.SigCompactEnd, Name: trigger}}
	case "turn_duration":
		return []events.Sig{{Kind: events.SigTurnEnd, Name: "turn_duration"}}
	case "api_error":
		return []events.Sig{{Kind: events.SigAPIError, Status: APIErrorRetrying, Text: apiErrorText(t)}}
	}
	return nil
}

// apiErrorText summarizes a system/api_error line: "status 529:
// Overloaded (retry 1/10)".
func apiErrorText(t object) string {
	q := t.quiet()
	var status, msg string
	if e, ok := q.obj("error"); ok {
		status = e.number("status")
		// The API's error nests: {status, error: {type, error: {type, message}}}.
		for range 4 {
			if m := e.str("message"); m != "" {
				msg = m
				break
			}
			next, ok := e.obj("error")
			if !ok {
				break
			}
			e = next
		}
	} else {
		msg = q.str("error")
	}
	var b strings.Builder
	if status != "" {
		b.WriteString("status " + status)
	}
	if msg != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(msg)
	}
	if a, m := q.number("retryAttempt"), q.number("maxRetries"); a != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("(retry " + a)
		if m != "" {
			b.WriteString("/" + m)
		}
		b.WriteString(")")
	}
	return b.String()
}
