package codex

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/events/jsonlex"
)

// Parser names and versions stamped on Observation.Parser. A change in
// what a parser emits for the same input bumps its version.
const (
	ParserLine   = "codex-rollout/3" // 2: usage and rate limits; 3: a fork's copy of its origin's history spends nothing
	ParserNotify = "codex-notify/1"
)

// Agent is the agent name Codex observations carry (events.Meta.Agent)
// and the session records (events.SessionStarted.Agent).
const Agent = "codex"

// Rollout formats (FileState.Format).
const (
	FormatEnvelope = "envelope" // Codex CLI 0.40 and later
	FormatLegacy   = "legacy"   // before 0.40
)

// Config is the agents' shared parser configuration
// (ingest.ParserConfig): extra redaction patterns or a Redactor, and the
// cap on Observation.Raw.
type Config = ingest.ParserConfig

// Parser parses rollout lines and notify payloads with one compiled
// Config. It is immutable and safe for concurrent use; the per-file
// context a rollout line needs is a FileState the caller keeps.
type Parser struct {
	red    *redact.Redactor
	maxRaw int
}

// NewParser compiles cfg; its errors are ingest.ParserConfig.Compile's.
func NewParser(cfg Config) (*Parser, error) {
	red, maxRaw, err := cfg.Compile("codex parser")
	if err != nil {
		return nil, err
	}
	return &Parser{red: red, maxRaw: maxRaw}, nil
}

// NewParserFrom returns a Parser with r's redaction rules and raw cap
// (another agent's parser, such as Claude Code's), so both agents'
// observations are redacted alike.
func NewParserFrom(r ingest.Redaction) *Parser {
	return &Parser{red: r.Redactor(), maxRaw: r.MaxRaw()}
}

// Redactor returns the parser's redaction rules.
func (p *Parser) Redactor() *redact.Redactor { return p.red }

// FileState is what the lines of one rollout read so far tell about the
// lines after them. Parser.Line updates it; it is rebuilt by parsing the
// file's lines 1..Line in order. The zero value is the state before line 1.
type FileState struct {
	Line       int    // the last line parsed
	Format     string // FormatEnvelope or FormatLegacy, from the first line that tells
	SessionID  string // the thread id of the first session_meta
	ForkedFrom string // its forked_from_id
	// Parent is the thread id of the thread that spawned this one, for a
	// subagent's rollout (session_meta source.subagent.thread_spawn.
	// parent_thread_id, Codex CLI 0.13x+).
	Parent string
	Metas  int // session_meta lines seen
	// Began is when the thread began: its session_meta's timestamp (of
	// the payload, else of the line).
	Began string
	Model string // the model of the last turn_context
	Tier  string // the service_tier of the last turn_context; "": standard
	// Copying is true while the lines of a fork or a subagent's rollout
	// are the history it copied from its origin or parent: from the
	// origin's session_meta (a fork) or the file's own (a subagent) to
	// the first turn that began after the thread was made (its turn id,
	// a UUIDv7, is not older than the thread's).
	Copying bool
	// Base is the last running total read in this file (while Copying,
	// the origin's). The next token_count's spend is its growth over Base
	// (all of it once a total falls below it: a counter that started
	// afresh); HaveBase is false before the first total.
	Base     events.Usage
	HaveBase bool
	// Own is true once a total of the thread's own (not copied) was read.
	Own bool
	// Copied is the last total read in the copied history, which the
	// thread's own totals go on from; zero when none was copied.
	Copied events.Usage
	// stdin maps the call id of a write_stdin call to the unified exec
	// session it writes to, so its output can end that background
	// terminal.
	stdin map[string]string
	// execs holds the call ids of exec_command calls, whose output may
	// leave a background terminal running.
	execs map[string]bool
	// badParent is why the session_meta just read names a parent thread
	// id that can name no session; Line refuses that line with it.
	badParent error
}

// Clone returns a copy of s that shares nothing with it.
func (s FileState) Clone() FileState {
	c := s
	c.stdin = make(map[string]string, len(s.stdin))
	for k, v := range s.stdin {
		c.stdin[k] = v
	}
	c.execs = make(map[string]bool, len(s.execs))
	for k, v := range s.execs {
		c.execs[k] = v
	}
	return c
}

// maxCalls bounds the call ids a FileState remembers.
const maxCalls = 4096

func (s *FileState) rememberExec(id string) {
	if s.execs == nil {
		s.execs = map[string]bool{}
	}
	if len(s.execs) >= maxCalls {
		clear(s.execs)
	}
	s.execs[id] = true
}

func (s *FileState) rememberStdin(id, session string) {
	if s.stdin == nil {
		s.stdin = map[string]string{}
	}
	if len(s.stdin) >= maxCalls {
		clear(s.stdin)
	}
	s.stdin[id] = session
}

// Background terminal task ids are "exec-<unified exec session id>".
func terminalTask(session string) string { return "exec-" + session }

// Tool result statuses (events.Sig.Status).
const (
	StatusOK           = "ok"
	StatusError        = "error"
	StatusRejected     = "rejected"
	StatusBackgrounded = events.OutcomeBackground
)

// Line parses line n (1-based) of the rollout at path, b (with or without
// its newline), in the context st of the lines before it, and advances st.
//
// The observation has Key "line:<n>", Parser ParserLine, Path, Line, Kind
// (the envelope type and the payload type, "event_msg/task_started",
// "response_item/function_call"; legacy lines "legacy/<type>",
// "legacy/meta", "legacy/state"), AgentTime (the envelope's timestamp),
// Meta (Agent "codex"; session_meta: SessionID = id, Version =
// cli_version, Cwd, GitBranch, ForkedFrom = forked_from_id; turn_context:
// Model, Cwd, AgentMode = sandbox_policy type) and Signals:
//
//	session_meta, first in the file   session_start (Name: source); a
//	                                  subagent's (source.subagent.thread_spawn)
//	                                  sets Meta.AgentID to its id,
//	                                  Meta.SessionID to the parent thread's,
//	                                  Meta.AgentType to its role and
//	                                  Meta.Depth to its depth, and
//	                                  every other signal of the parent's
//	                                  history it copies is dropped
//	session_meta, later               none; a Problems entry unless it is
//	                                  the fork origin's (a fork copies the
//	                                  origin's history) or the same id
//	event_msg task_started (0.4x+)    prompt (ID turn_id): a turn starts
//	event_msg user_message, item_completed UserMessage (0.144)
//	                                  prompt (Status in_turn, Text): opens a
//	                                  turn only if none is open (versions
//	                                  that write no task_started)
//	event_msg task_complete           turn_end (Name "task_complete")
//	event_msg turn_aborted            interrupt (Name: reason)
//	event_msg exec_approval_request, apply_patch_approval_request,
//	      request_permissions         permission (ID call_id, Name
//	                                  exec_command|apply_patch, Text command)
//	event_msg exec_command_end with process_id
//	                                  background_done (Task exec-<id>)
//	event_msg context_compacted, compacted
//	                                  compact_end
//	event_msg token_count             usage (one call's: the growth of
//	                                  info.total_token_usage, of the last
//	                                  turn_context's model and service tier)
//	                                  and rate_limit per window (see
//	                                  tokenCount); none in a fork's or a
//	                                  subagent's copy of its origin's history
//	                                  (FileState.Copying)
//	event_msg error                   api_error (failed), turn_end (Name "error")
//	event_msg stream_error            api_error (retrying)
//	response_item message assistant   text
//	response_item reasoning           thinking
//	response_item function_call, custom_tool_call, local_shell_call
//	                                  tool_use (ID call_id, Name, Text: command)
//	response_item function_call_output, custom_tool_call_output
//	                                  tool_result (ID call_id, Status ok|error|
//	                                  rejected|backgrounded; Task exec-<id>
//	                                  when an exec_command leaves its
//	                                  terminal running: "Process running
//	                                  with session ID <id>"), and
//	                                  background_done (Task exec-<id>) when
//	                                  a write_stdin to that terminal reads
//	                                  "Process exited with code <n>"
//	legacy meta line                  session_start
//	legacy message user               prompt, unless it is context
//	                                  (<user_instructions>, <environment_context>)
//	legacy message assistant, reasoning, function_call, function_call_output
//	                                  as their envelope forms
//	other known types                 none
//	unknown types                     none, and a Problems entry
//
// A line of the other format than the file's first lines (legacy and
// envelope lines mixed) yields no signals and a Problems entry; so does a
// first line that is not a session_meta (the importer then names the
// session after the file).
//
// Errors are *ingest.LineError values naming path and n, wrapping
// ingest.ErrInvalidUTF8, ingest.ErrSyntax, ingest.ErrNotObject,
// ingest.ErrDuplicateKey (a member named twice in one object, at any
// depth: its path), or
// ingest.ErrSecretID when a redaction rule matches one of the line's ids
// (ids are never redacted), or events.ErrMalformed when the thread's
// session_meta names a parent thread id that can name no session
// (events.ValidOwnSessionID; events.ErrSubagentID too for "agent-<id>");
// the observation is still returned, Kind
// "invalid", with Raw and the error in Problems, so an importer can
// record it (--skip-invalid).
func (p *Parser) Line(st *FileState, path string, n int, b []byte) (events.Observation, error) {
	b = trimEOL(b)
	if st.Line < n {
		st.Line = n
	}
	o := events.Observation{Key: "line:" + strconv.Itoa(n), Parser: ParserLine, Path: path, Line: n, Meta: events.Meta{Agent: Agent}}
	top, col, err := decodeObject(b)
	if err == nil {
		if k, dup := duplicateKey(b); dup {
			// A reader keeps one value and the line holds both:
			// refused, as a notify payload that names a member twice is.
			err = fmt.Errorf("%w %q: the object names it more than once", ingest.ErrDuplicateKey, k)
		}
	}
	if err != nil {
		o.Kind = "invalid"
		o.Problems = []string{fmt.Sprintf("line %d:%d: %v", n, col, err)}
		return p.finish(o, b), &ingest.LineError{Path: path, Line: n, Col: col, Err: err}
	}
	var probs []string
	t := objectOf(top, &probs)
	format := FormatLegacy
	if _, ok := top["payload"]; ok {
		format = FormatEnvelope
	} else if _, ok := top["type"]; ok && t.str("timestamp") != "" && n > 1 {
		format = FormatEnvelope // an envelope whose payload is missing
	}
	if st.Format == "" {
		st.Format = format
	}
	if format != st.Format {
		o.Kind = "mixed"
		o.Problems = []string{fmt.Sprintf("a %s line in a %s rollout: recorded without signals", format, st.Format)}
		return p.finish(o, b), nil
	}
	var sigs []events.Sig
	if format == FormatEnvelope {
		sigs = p.envelope(st, t, &o, n)
	} else {
		sigs = p.legacy(st, t, &o, n)
	}
	if st.Parent != "" && st.Copying {
		// A subagent's copy of its parent's history: the parent's turns,
		// recorded in the parent's session, not this one's.
		sigs = slices.DeleteFunc(sigs, func(s events.Sig) bool { return s.Kind != events.SigSessionStart })
	}
	o.Signals = sigs
	o.Problems = append(o.Problems, probs...)
	if err := st.badParent; err != nil {
		// Recorded as an invalid line, as one whose ids a rule matches.
		st.badParent = nil
		lerr := &ingest.LineError{Path: path, Line: n, Err: err}
		o = events.Observation{Key: o.Key, Parser: o.Parser, Path: path, Line: n, Kind: "invalid",
			Meta: events.Meta{Agent: Agent}, Problems: []string{fmt.Sprintf("line %d: %v", n, err)}}
		return p.finish(o, b), lerr
	}
	if err := ingest.SecretID(p.red, o); err != nil {
		// Recorded as an invalid line: no ids, no signals.
		lerr := &ingest.LineError{Path: path, Line: n, Err: err}
		o = events.Observation{Key: o.Key, Parser: o.Parser, Path: path, Line: n, Kind: "invalid",
			Meta: events.Meta{Agent: Agent}, Problems: []string{fmt.Sprintf("line %d: %v", n, err)}}
		return p.finish(o, b), lerr
	}
	return p.finish(o, b), nil
}

func (p *Parser) envelope(st *FileState, t object, o *events.Observation, n int) []events.Sig {
	typ := t.str("type")
	o.AgentTime = t.str("timestamp")
	pl, _ := t.obj("payload")
	sub := pl.str("type")
	o.Kind = typ
	if sub != "" && (typ == "event_msg" || typ == "response_item") {
		o.Kind = typ + "/" + sub
	}
	if n == 1 && typ != "session_meta" {
		o.Problems = append(o.Problems, "the rollout does not start with session_meta: its session is named after the file")
	}
	switch typ {
	case "session_meta":
		return sessionMeta(st, pl, o)
	case "turn_context":
		st.turn(pl.quiet().str("turn_id"), o.AgentTime)
		st.Tier = serviceTier(pl.quiet().str("service_tier"))
		o.Meta.Cwd = pl.str("cwd")
		if p := events.WorkDirProblem(o.Meta.Cwd); p != "" {
			o.Problems = append(o.Problems, p)
		}
		o.Meta.Model = pl.str("model")
		if o.Meta.Model != "" {
			st.Model = o.Meta.Model
		}
		o.Meta.AgentMode = sandboxType(pl)
		return nil
	case "response_item":
		return responseItem(st, pl, sub, o)
	case "event_msg":
		return eventMsg(st, pl, sub, o)
	case "compacted":
		return []events.Sig{{Kind: events.SigCompactEnd, Name: "compacted"}}
	case "world_state", "inter_agent_communication":
		return nil // recorded, no signal (0.144)
	case "":
		o.Kind = "untyped"
		o.Problems = append(o.Problems, `envelope has no "type"`)
	default:
		o.Problems = append(o.Problems, fmt.Sprintf("unknown rollout item type %q", typ))
	}
	return nil
}

// readTokenUsage reads a Codex TokenUsage object as one usage: Input
// the fresh part of input_tokens, CacheRead cached_input_tokens,
// CacheWrite cache_write_input_tokens, Output output_tokens (reasoning
// included), Reasoning reasoning_output_tokens. raw is its counts as
// "input/cached/written/output"; refused says why it cannot be used.
func readTokenUsage(tot object) (u events.Usage, raw, refused string) {
	var input, cached int64
	for _, f := range []struct {
		key string
		dst *int64
	}{
		{"input_tokens", &input}, {"cached_input_tokens", &cached}, {"cache_write_input_tokens", &u.CacheWrite},
		{"output_tokens", &u.Output}, {"reasoning_output_tokens", &u.Reasoning},
	} {
		v, why := ingest.TokenCount(tot.raw(f.key))
		if why == "" && (f.key == "input_tokens" || f.key == "output_tokens") && ingest.IsAbsent(tot.raw(f.key)) {
			why = "missing"
		}
		if why != "" && refused == "" {
			refused = fmt.Sprintf("field %q: %s", tot.at(f.key), why)
		}
		*f.dst = v
	}
	if refused == "" && cached+u.CacheWrite > input {
		refused = fmt.Sprintf("cached_input_tokens %d and cache_write_input_tokens %d over input_tokens %d", cached, u.CacheWrite, input)
	}
	u.Input, u.CacheRead = input-cached-u.CacheWrite, cached
	return u, fmt.Sprintf("%d/%d/%d/%d", input, cached, u.CacheWrite, u.Output), refused
}

// totalBelow reports whether the running total u is below b: its input
// (all of input_tokens), cached input, output or reasoning count is, as
// in a counter that started afresh. The fresh part alone may go down: a
// call whose cached and written counts overlap (their sum over its
// input_tokens) takes from it.
func totalBelow(u, b events.Usage) bool {
	return u.Input+u.CacheRead+u.CacheWrite < b.Input+b.CacheRead+b.CacheWrite ||
		u.CacheRead < b.CacheRead || u.Output < b.Output || u.Reasoning < b.Reasoning
}

// minusUsage returns u less t, field by field.
func minusUsage(u, t events.Usage) events.Usage {
	u.Input -= t.Input
	u.CacheRead -= t.CacheRead
	u.CacheWrite -= t.CacheWrite
	u.Output -= t.Output
	u.Reasoning -= t.Reasoning
	return u
}

// serviceTier returns the tier a turn_context's service_tier names as
// events.Usage.ServiceTier does: "" for none, default or auto.
func serviceTier(t string) string {
	switch t {
	case "", "default", "auto", "standard":
		return ""
	}
	return t
}

// sandboxType returns the sandbox_policy's type: an object {type} since
// 0.40, a bare string in some versions.
func sandboxType(pl object) string {
	q := pl.quiet()
	if s := q.str("sandbox_policy"); s != "" {
		return s
	}
	sp, _ := q.obj("sandbox_policy")
	return sp.str("type")
}

func sessionMeta(st *FileState, pl object, o *events.Observation) []events.Sig {
	id := pl.str("id")
	st.Metas++
	if st.Metas > 1 {
		switch id {
		case st.ForkedFrom, st.Parent, st.SessionID:
			// A fork copies its origin's history, session_meta included;
			// a subagent may copy its parent's so.
			if id != "" && (id == st.ForkedFrom || id == st.Parent) {
				st.Copying = true
			}
		default:
			o.Problems = append(o.Problems, fmt.Sprintf("a second session_meta, for session %q: its lines stay in session %q", id, st.SessionID))
		}
		return nil
	}
	st.SessionID = id
	st.Began = cmp.Or(pl.quiet().str("timestamp"), o.AgentTime)
	st.ForkedFrom = pl.str("forked_from_id")
	o.Meta.SessionID = id
	if pr := ingest.SessionIDProblem("session_meta id", id); pr != "" {
		// It would be the session's agent_session_id.
		o.Problems = append(o.Problems, pr)
		o.Meta.SessionID = ""
	}
	o.Meta.ForkedFrom = st.ForkedFrom
	if parent, _, _ := spawnedBy(pl); parent != "" && parent != id {
		if err := events.ValidOwnSessionID(parent); err != nil {
			// A parent no session can have (a byte outside
			// [A-Za-z0-9_-], too long, a subagent's "agent-<id>"): the
			// thread is no one's subagent, and not filed as one.
			st.badParent = fmt.Errorf("session_meta: the parent thread id (source.subagent.thread_spawn.parent_thread_id, %d bytes) can name no session: %w", len(parent), err)
			return nil
		}
	}
	if parent, role, depth := spawnedBy(pl); parent != "" && parent != id {
		// A subagent's thread: its session is its own, linked to the
		// parent's as Claude Code's subagents are (Meta.AgentID its own
		// id, Meta.SessionID the parent's), and the history it starts
		// with is the parent's.
		st.Parent, st.Copying = parent, true
		o.Meta.AgentID, o.Meta.SessionID, o.Meta.AgentType = id, parent, role
		o.Meta.Depth = depth
	}
	o.Meta.Cwd = pl.str("cwd")
	if p := events.WorkDirProblem(o.Meta.Cwd); p != "" {
		o.Problems = append(o.Problems, p)
	}
	o.Meta.Version = pl.str("cli_version")
	if g, ok := pl.obj("git"); ok {
		o.Meta.GitBranch = g.str("branch")
	}
	source := pl.quiet().str("source")
	if source == "" {
		if s, ok := pl.quiet().obj("source"); ok {
			for k := range s.M {
				source = k // {"subagent": {...}}
			}
		}
	}
	return []events.Sig{{Kind: events.SigSessionStart, Name: or(source, "startup")}}
}

// spawnedBy returns the parent thread id, the role and the depth of a
// subagent's session_meta payload: source {"subagent": {"thread_spawn":
// {parent_thread_id, depth, agent_role?, agent_nickname?}}} (Codex CLI
// 0.13x+), or the payload's parent_thread_id; the role is agent_role or
// agent_nickname (of thread_spawn or the payload), else "subagent"; the
// depth is thread_spawn's depth when it is a whole number from 1 to
// 1000, else 0 (unknown). All are zero for any other source.
func spawnedBy(pl object) (parent, role string, depth int) {
	q := pl.quiet()
	var ts object
	if src, ok := q.obj("source"); ok {
		if sa, ok := src.quiet().obj("subagent"); ok {
			ts, _ = sa.quiet().obj("thread_spawn")
			ts = ts.quiet()
		}
	}
	parent = ts.str("parent_thread_id")
	if parent == "" {
		parent = q.str("parent_thread_id")
	}
	if parent == "" {
		return "", "", 0
	}
	role = cmp.Or(ts.str("agent_role"), ts.str("agent_nickname"), q.str("agent_role"), q.str("agent_nickname"), "subagent")
	if d, err := strconv.Atoi(ts.quiet().number("depth")); err == nil && d >= 1 && d <= 1000 {
		depth = d
	}
	return parent, role, depth
}

func responseItem(st *FileState, pl object, sub string, o *events.Observation) []events.Sig {
	switch sub {
	case "message":
		switch pl.str("role") {
		case "assistant":
			if s := contentText(pl.raw("content")); strings.TrimSpace(s) != "" {
				return []events.Sig{{Kind: events.SigText, Text: s}}
			}
		}
		// User and developer messages repeat what event_msg reports
		// (user_message) or are context Codex adds.
		return nil
	case "reasoning":
		return []events.Sig{{Kind: events.SigThinking}}
	case "function_call", "custom_tool_call", "local_shell_call":
		return toolCall(st, pl, sub)
	case "function_call_output", "custom_tool_call_output":
		return toolOutput(st, pl)
	case "web_search_call", "ghost_snapshot", "compaction", "image_generation_call",
		"tool_search_call", "tool_search_output", "additional_tools", "context_compaction", "compaction_trigger", "other":
		return nil
	case "":
		o.Problems = append(o.Problems, `response_item has no payload "type"`)
	default:
		o.Problems = append(o.Problems, fmt.Sprintf("unknown response item type %q", sub))
	}
	return nil
}

func eventMsg(st *FileState, pl object, sub string, o *events.Observation) []events.Sig {
	switch sub {
	case "token_count":
		return tokenCount(st, pl, o)
	case "task_started", "turn_started":
		st.turn(pl.str("turn_id"), o.AgentTime)
		return []events.Sig{{Kind: events.SigPrompt, ID: pl.str("turn_id")}}
	case "user_message":
		return []events.Sig{{Kind: events.SigPrompt, Status: events.PromptInTurn, Text: pl.str("message")}}
	case "item_completed":
		if it, ok := pl.obj("item"); ok && it.str("type") == "UserMessage" {
			return []events.Sig{{Kind: events.SigPrompt, Status: events.PromptInTurn, Text: contentText(it.raw("content"))}}
		}
		return nil
	case "task_complete", "turn_complete":
		end := events.Sig{Kind: events.SigTurnEnd, Name: "task_complete"}
		last := strings.TrimSpace(pl.quiet().str("last_agent_message"))
		switch {
		case strings.Contains(last, "<proposed_plan>"):
			end.Status = events.TurnEndPlan
		case strings.HasSuffix(last, "?"):
			end.Status = events.TurnEndQuestion
		}
		return []events.Sig{end}
	case "turn_aborted":
		return []events.Sig{{Kind: events.SigInterrupt, Name: or(pl.str("reason"), "interrupted")}}
	case "exec_approval_request", "request_permissions":
		return []events.Sig{{Kind: events.SigPermission, ID: pl.str("call_id"), Name: "exec_command", Text: commandText(pl.raw("command"))}}
	case "apply_patch_approval_request":
		return []events.Sig{{Kind: events.SigPermission, ID: pl.str("call_id"), Name: "apply_patch", Text: patchText(pl)}}
	case "exec_command_end":
		if id := pl.quiet().str("process_id"); id != "" {
			status := events.OutcomeOK
			if c := pl.quiet().number("exit_code"); c != "" && c != "0" {
				status = "failed"
			}
			return []events.Sig{{Kind: events.SigBackgroundDone, Task: terminalTask(id), Status: status}}
		}
		return nil
	case "context_compacted":
		return []events.Sig{{Kind: events.SigCompactEnd, Name: "context_compacted"}}
	case "error":
		return []events.Sig{{Kind: events.SigAPIError, Status: "failed", Text: pl.str("message")}, {Kind: events.SigTurnEnd, Name: "error"}}
	case "stream_error":
		return []events.Sig{{Kind: events.SigAPIError, Status: "retrying", Text: pl.str("message")}}
	case "agent_message", "agent_reasoning", "agent_reasoning_raw_content", "agent_reasoning_section_break",
		"exec_command_begin", "exec_command_output_delta", "patch_apply_begin", "patch_apply_end",
		"thread_rolled_back", "plan_update", "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin", "web_search_end",
		"entered_review_mode", "exited_review_mode", "background_event", "undo_started", "undo_completed",
		"thread_goal_updated", "thread_settings_applied", "image_generation_end", "sub_agent_activity",
		"realtime_conversation_closed", "session_configured", "warning", "terminal_interaction", "view_image_tool_call",
		"turn_diff", "get_history_entry_response", "shutdown_complete", "list_custom_prompts_response", "deprecation_notice":
		return nil
	case "":
		o.Problems = append(o.Problems, `event_msg has no payload "type"`)
	default:
		o.Problems = append(o.Problems, fmt.Sprintf("unknown event type %q", sub))
	}
	return nil
}

// tokenCount returns the usage and rate-limit signals of a token_count
// event (Codex CLI 0.130 to 0.150): info.total_token_usage is the
// thread's running total and info.last_token_usage the latest call's,
// each {input_tokens, cached_input_tokens and cache_write_input_tokens
// (0.144+; both parts of input_tokens, as OpenAI's usage counts them),
// output_tokens, reasoning_output_tokens (part of output_tokens)}. The
// usage signal is one call's spend, not a running total, so that files
// of one thread (a `codex resume` writes a new one whose totals go on
// from the last) add up the same in whatever order they are imported:
// the growth of the total over the file's previous one (Base: its fresh
// input part may be negative, where the call's cached and written counts
// overlap, so that the thread's sum is exact); for the thread's first own
// total in the file, last_token_usage (the call itself), else the growth
// over a copied total, else the whole total. Input is the fresh part (input_tokens less the cached and the
// cache-written parts), CacheRead the cached part, CacheWrite the
// written part; its ID is "codex-total:" and the running total it
// reached (input/cached/written/output), which names one call of a
// thread, so a total read in two files counts once. A reading that
// repeats the previous total gives no usage signal. Rate limits
// {limit_id, plan_type, primary, secondary: {used_percent,
// window_minutes, resets_at (Unix seconds)}} give one rate_limit signal
// per window. A count that is not a whole number from 0 to
// events.MaxUsageTokens, input_tokens or output_tokens absent, or cached
// and written tokens over the input, refuses the usage (a
// ingest.UsageRefused Problems entry); the rate limits still count.
func tokenCount(st *FileState, pl object, o *events.Observation) []events.Sig {
	var sigs []events.Sig
	if info, ok := pl.obj("info"); ok {
		if tot, ok := info.obj("total_token_usage"); ok {
			u, raw, refused := readTokenUsage(tot)
			switch {
			case refused != "":
				o.Problems = append(o.Problems, ingest.UsageRefused+refused)
			case st.Copying:
				// The origin's spend, copied in: it sets where this
				// thread's own totals start from and counts nothing here.
				st.Base, st.HaveBase, st.Copied = u, true, u
			default:
				d := u
				if st.HaveBase && !totalBelow(u, st.Base) {
					d = minusUsage(u, st.Base)
				}
				if !st.Own {
					// The first total of this thread's own in the file: it
					// may go on from totals this file does not hold (a
					// resumed thread's earlier file) or from the copied
					// ones, or start afresh; the call's own usage says.
					if last, ok := info.quiet().obj("last_token_usage"); ok {
						if l, _, why := readTokenUsage(last.quiet()); why == "" && !totalBelow(u, l) {
							d = l
							if l == u {
								st.Copied = events.Usage{} // a counter of its own, from zero
							}
						}
					}
				}
				st.Base, st.HaveBase, st.Own = u, true, true
				if d.Total() == 0 && d.Reasoning == 0 {
					break // the same total again
				}
				d.Model, d.ServiceTier = st.Model, st.Tier
				if !totalBelow(u, st.Copied) {
					rt := minusUsage(u, st.Copied)
					d.RunningTotal = &rt
				}
				sigs = append(sigs, events.Sig{Kind: events.SigUsage, ID: "codex-total:" + raw, Usage: &d})
			}
		}
	}
	if rl, ok := pl.obj("rate_limits"); ok && !st.Copying { // a copied reading is the origin's, and old
		q := rl.quiet()
		account := or(q.str("limit_id"), "codex")
		if plan := q.str("plan_type"); plan != "" {
			account += "/" + plan
		}
		for _, w := range []string{"primary", "secondary"} {
			win, ok := rl.obj(w)
			if !ok {
				continue
			}
			var l events.Limit
			l.Account, l.Window = account, w
			pct, err := strconv.ParseFloat(win.number("used_percent"), 64)
			if err != nil || pct < 0 || pct > 1000 {
				o.Problems = append(o.Problems, fmt.Sprintf("rate limit %s refused: used_percent %q", w, win.quiet().number("used_percent")))
				continue
			}
			l.UsedPercent = pct
			l.Minutes, _ = strconv.ParseInt(win.quiet().number("window_minutes"), 10, 64)
			l.ResetsAt, _ = strconv.ParseInt(win.quiet().number("resets_at"), 10, 64)
			sigs = append(sigs, events.Sig{Kind: events.SigRateLimit, Name: w, Limit: &l})
		}
	}
	return sigs
}

// turn notes that a turn with id began: a fork's copy of its origin's
// history ends at the first turn that began after the fork. Codex turn and
// thread ids are UUIDv7, whose first 48 bits are the Unix milliseconds of
// their making; a turn id without that time ends the copy too, so a fork
// then counts as before rather than losing its own spend.
func (st *FileState) turn(id, at string) {
	if !st.Copying || id == "" {
		return
	}
	tt, ok1 := uuidv7Millis(id)
	ft, ok2 := uuidv7Millis(st.SessionID)
	if ok1 && ok2 {
		st.Copying = tt < ft
		return
	}
	// Ids that are not UUIDv7: a copied line keeps the time it was
	// first written at, before the thread began.
	lt, err1 := time.Parse(time.RFC3339Nano, at)
	bt, err2 := time.Parse(time.RFC3339Nano, st.Began)
	st.Copying = err1 == nil && err2 == nil && lt.Before(bt)
}

// uuidv7Millis returns the Unix milliseconds in a UUIDv7's first 48 bits.
func uuidv7Millis(id string) (int64, bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[14] != '7' {
		return 0, false
	}
	ms, err := strconv.ParseInt(id[:8]+id[9:13], 16, 64)
	return ms, err == nil
}

// toolCall returns the tool_use signal of a function, custom tool or
// local shell call, remembering what its output needs.
func toolCall(st *FileState, pl object, sub string) []events.Sig {
	id := pl.str("call_id")
	if id == "" {
		id = pl.quiet().str("id")
	}
	name := pl.str("name")
	var args object
	switch sub {
	case "function_call":
		// arguments is a JSON text holding an object.
		var m map[string]json.RawMessage
		if s := pl.str("arguments"); s != "" && json.Unmarshal([]byte(s), &m) == nil {
			args = objectOf(m, new([]string))
		}
	case "local_shell_call":
		name = "local_shell"
		act, _ := pl.obj("action")
		args = act.quiet()
	}
	text := ""
	switch {
	case args.M != nil:
		text = commandText(args.raw("cmd"))
		if text == "" {
			text = commandText(args.raw("command"))
		}
		if name == "write_stdin" {
			if sid := args.number("session_id"); sid != "" {
				st.rememberStdin(id, sid)
			} else if sid := args.str("session_id"); sid != "" {
				st.rememberStdin(id, sid)
			}
		}
	case sub == "custom_tool_call":
		text = pl.str("input")
	}
	if name == "exec_command" || name == "exec" || name == "shell" || name == "local_shell" {
		st.rememberExec(id)
	}
	return []events.Sig{{Kind: events.SigToolUse, ID: id, Name: name, Text: text}}
}

var (
	runningRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Process running with session ID (\d+)`) })
	exitedRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Process exited with code (-?\d+)`) })
	legacyExit = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"exit_code"\s*:\s*(-?\d+)`) })
)

// toolOutput returns the tool_result signal of a call's output, and a
// background_done when it reports a background terminal ended.
func toolOutput(st *FileState, pl object) []events.Sig {
	id := pl.str("call_id")
	out := outputText(pl.raw("output"))
	sig := events.Sig{Kind: events.SigToolResult, ID: id, Status: StatusOK}
	lower := strings.ToLower(out)
	switch {
	case strings.Contains(lower, "rejected by user") || strings.Contains(lower, "declined by user"):
		sig.Status = StatusRejected
	case strings.HasPrefix(strings.TrimSpace(out), "Script failed"), strings.HasPrefix(strings.TrimSpace(out), "Script error"):
		sig.Status = StatusError
	}
	if m := exitedRE().FindStringSubmatch(out); m != nil && m[1] != "0" {
		sig.Status = StatusError
	} else if m := legacyExit().FindStringSubmatch(out); m != nil && m[1] != "0" {
		sig.Status = StatusError
	}
	sigs := []events.Sig{sig}
	if session, ok := st.stdin[id]; ok {
		delete(st.stdin, id)
		if m := exitedRE().FindStringSubmatch(out); m != nil {
			status := "completed"
			if m[1] != "0" {
				status = "failed"
			}
			sigs = append(sigs, events.Sig{Kind: events.SigBackgroundDone, Task: terminalTask(session), Status: status})
		}
		return sigs
	}
	if st.execs[id] {
		delete(st.execs, id)
		if m := runningRE().FindStringSubmatch(out); m != nil {
			sigs[0].Status = StatusBackgrounded
			sigs[0].Task = terminalTask(m[1])
		}
	}
	return sigs
}

func (p *Parser) legacy(st *FileState, t object, o *events.Observation, n int) []events.Sig {
	typ := t.str("type")
	switch {
	case t.M["record_type"] != nil:
		o.Kind = "legacy/" + or(t.str("record_type"), "record")
		return nil
	case typ == "" && t.str("id") != "":
		o.Kind = "legacy/meta"
		o.AgentTime = t.str("timestamp")
		st.Metas++
		if st.Metas > 1 {
			o.Problems = append(o.Problems, fmt.Sprintf("a second session header, for session %q", t.str("id")))
			return nil
		}
		st.SessionID = t.str("id")
		o.Meta.SessionID = st.SessionID
		if pr := ingest.SessionIDProblem("id", st.SessionID); pr != "" {
			o.Problems = append(o.Problems, pr) // not the session's agent_session_id
			o.Meta.SessionID = ""
		}
		if g, ok := t.obj("git"); ok {
			o.Meta.GitBranch = g.str("branch")
		}
		return []events.Sig{{Kind: events.SigSessionStart, Name: "startup"}}
	}
	o.Kind = "legacy/" + or(typ, "untyped")
	if n == 1 {
		o.Problems = append(o.Problems, "the rollout does not start with its session header: its session is named after the file")
	}
	switch typ {
	case "message":
		if t.str("role") != "user" {
			return responseItem(st, t, typ, o)
		}
		text := strings.TrimSpace(contentText(t.raw("content")))
		if text == "" || strings.HasPrefix(text, "<user_instructions>") || strings.HasPrefix(text, "<environment_context>") {
			return nil
		}
		return []events.Sig{{Kind: events.SigPrompt, Text: text}}
	case "":
		o.Problems = append(o.Problems, `line has no "type"`)
		return nil
	}
	return responseItem(st, t, typ, o)
}

// Notify parses one payload Codex CLI passed to its notify program (the
// JSON text of its last argument), following the notify contract of
// Codex CLI 0.2x to 0.144: {"type": "agent-turn-complete", "thread-id",
// "turn-id", "cwd", "input-messages": [..], "last-assistant-message"}.
//
// "type" and "thread-id" are required: without them, or not strings, the
// error wraps ingest.ErrMissingField or ingest.ErrFieldType and names the
// field. The observation has Key "notify:<type>:<turn-id>" (a turn's
// notification recorded once), Parser ParserNotify, Kind the type, Meta
// (SessionID thread-id, Cwd, Agent "codex"), and Signals: for
// agent-turn-complete, text (last-assistant-message) and turn_end (Name
// "agent-turn-complete"); for a type this package does not know, none and
// a Problems entry.
func (p *Parser) Notify(b []byte) (events.Observation, error) {
	o, err := parseNotify(b)
	if err != nil {
		return o, err
	}
	if err := ingest.SecretID(p.red, o); err != nil {
		return events.Observation{}, &NotifyError{Field: "thread-id", Err: err}
	}
	if turn := strings.TrimPrefix(o.Key, "notify:"+o.Kind+":"); !strings.HasPrefix(turn, "sha256:") && p.red.Redact(turn) != turn {
		return events.Observation{}, &NotifyError{Field: "turn-id", Err: ingest.ErrSecretID}
	}
	return p.finish(o, b), nil
}

// CheckNotify reports what Notify would refuse in b, without redacting
// anything: for the notify program's quick check before it spools b.
func CheckNotify(b []byte) error {
	_, err := parseNotify(b)
	return err
}

// NotifySession returns the session a notify payload b is for: its
// thread-id as a session aggregate. Errors are CheckNotify's.
func NotifySession(b []byte) (events.Aggregate, error) {
	o, err := parseNotify(b)
	if err != nil {
		return events.Aggregate{}, err
	}
	return events.Aggregate{Kind: events.KindSession, ID: o.Meta.SessionID}, nil
}

func parseNotify(b []byte) (events.Observation, error) {
	o := events.Observation{Parser: ParserNotify, Meta: events.Meta{Agent: Agent}}
	top, _, err := decodeObject(bytes.TrimSpace(b))
	if err != nil {
		return o, &NotifyError{Err: err}
	}
	if k, dup := jsonx.DuplicateKey(b, false); dup {
		return o, &NotifyError{Err: fmt.Errorf("%w %q: the payload names it more than once", ingest.ErrDuplicateKey, k)}
	}
	var probs []string
	t := objectOf(top, &probs)
	for _, f := range []string{"type", "thread-id"} {
		r, ok := top[f]
		if !ok || jsonKind(r) == "null" {
			return o, &NotifyError{Field: f, Err: ingest.ErrMissingField}
		}
		if k := jsonKind(r); k != "string" {
			return o, &NotifyError{Field: f, Err: fmt.Errorf("%w: want string, got %s", ingest.ErrFieldType, k)}
		}
	}
	typ := t.str("type")
	o.Kind = typ
	o.Meta.SessionID = t.str("thread-id")
	if o.Meta.SessionID == "" {
		return o, &NotifyError{Field: "thread-id", Err: ingest.ErrMissingField}
	}
	if err := events.ValidOwnSessionID(o.Meta.SessionID); err != nil {
		// A string of the right type whose characters cannot name the
		// session, or one of a subagent's shape ("agent-<id>"): said as
		// the claude hook says it of session_id.
		return o, &NotifyError{Field: "thread-id", Err: err}
	}
	o.Meta.Cwd = t.str("cwd")
	if p := events.WorkDirProblem(o.Meta.Cwd); p != "" {
		probs = append(probs, p)
	}
	turn := t.str("turn-id")
	o.Key = "notify:" + typ + ":" + turn
	if turn == "" {
		sum := sha256.Sum256(b)
		o.Key = "notify:" + typ + ":sha256:" + hex.EncodeToString(sum[:8])
	}
	switch typ {
	case "agent-turn-complete":
		if s := t.str("last-assistant-message"); strings.TrimSpace(s) != "" {
			o.Signals = append(o.Signals, events.Sig{Kind: events.SigText, Text: s})
		}
		o.Signals = append(o.Signals, events.Sig{Kind: events.SigTurnEnd, Name: typ})
	default:
		probs = append(probs, fmt.Sprintf("unknown notify type %q", typ))
	}
	o.Problems = probs
	return o, nil
}

// NotifyError reports a notify payload that could not be used. It wraps
// ingest.ErrSyntax, ingest.ErrInvalidUTF8, ingest.ErrNotObject,
// ingest.ErrDuplicateKey (a member named twice in one object, at any
// depth), ingest.ErrMissingField, ingest.ErrFieldType, events.ErrMalformed
// (a thread-id that cannot name a session: a byte outside [A-Za-z0-9_-],
// over events.MaxIDLen bytes, or beginning with "agent-", a subagent's
// session's, events.ErrSubagentID) or ingest.ErrSecretID (a thread-id or
// turn-id that a redaction rule matches).
type NotifyError struct {
	Field string // the offending field, if any
	Err   error
}

// Error returns "codex notify: [field "f": ]what".
func (e *NotifyError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("codex notify: field %q: %v", e.Field, e.Err)
	}
	return "codex notify: " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *NotifyError) Unwrap() error { return e.Err }

// IsNotify reports whether b reads as a Codex notify payload (an object
// with a "thread-id" member and no "hook_event_name"), so that one spool
// can hold both agents' payloads.
func IsNotify(b []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	_, thread := m["thread-id"]
	_, hook := m["hook_event_name"]
	return thread && !hook
}

// MaxSigText is the longest Sig.Text, in bytes (ingest.MaxSigText).
const MaxSigText = ingest.MaxSigText

// finish redacts o's text fields, sets Raw from orig (redacted, cut to the
// cap with Cut set) and returns o.
func (p *Parser) finish(o events.Observation, orig []byte) events.Observation {
	r := p.red
	for i := range o.Signals {
		s := &o.Signals[i]
		s.Text = shorten(r.Redact(s.Text), MaxSigText)
		s.Name = r.Redact(s.Name)
	}
	m := &o.Meta
	for _, f := range []*string{&m.Cwd, &m.Model, &m.Version, &m.GitBranch, &m.AgentMode, &m.Title} {
		*f = r.Redact(*f)
	}
	o.Kind, o.Key = ingest.RedactKind(r, o.Kind, o.Key, false)
	o.AgentTime = r.Redact(o.AgentTime)
	for i := range o.Problems {
		o.Problems[i] = r.Redact(o.Problems[i])
	}
	raw := r.JSON(strings.ToValidUTF8(string(orig), "\uFFFD"))
	if len(raw) > p.maxRaw {
		kept := cutUTF8(raw, p.maxRaw)
		sum := sha256.Sum256(orig)
		o.Cut = &events.Cut{Size: int64(len(orig)), SHA256: hex.EncodeToString(sum[:]), Kept: len(kept)}
		raw = kept
	}
	o.Raw = raw
	return o
}

// decodeObject checks that b is valid UTF-8 holding one JSON object and
// returns its members, or the 1-based column of the problem and an error
// wrapping ingest.ErrInvalidUTF8, ingest.ErrSyntax or ingest.ErrNotObject.
func decodeObject(b []byte) (map[string]json.RawMessage, int, error) {
	if i := jsonlex.InvalidUTF8(b); i >= 0 {
		return nil, i + 1, fmt.Errorf("%w at byte %d", ingest.ErrInvalidUTF8, i)
	}
	var m map[string]json.RawMessage
	err := json.Unmarshal(b, &m)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return nil, int(se.Offset), fmt.Errorf("%w at byte %d: %v", ingest.ErrSyntax, se.Offset, se)
	}
	if err != nil || m == nil {
		return nil, 1, fmt.Errorf("%w: got %s", ingest.ErrNotObject, jsonKind(bytes.TrimSpace(b)))
	}
	return m, 0, nil
}

// duplicateKey returns the path of the first member of b, one JSON
// object, named twice in one object at any depth (names compared
// exactly), and whether there is one: read in one pass
// (jsonx.Doc.DuplicateKey), or by jsonx.DuplicateKey when b is too large
// for that.
func duplicateKey(b []byte) (string, bool) {
	if d, ok := jsonx.Parse(b); ok {
		return d.DuplicateKey()
	}
	return jsonx.DuplicateKey(b, false)
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

func or(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// shorten returns s if it fits in n bytes, else its head and tail joined
// by " … ".
func shorten(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	const ell = " … "
	room := n - len(ell)
	head := cutUTF8(s, room*2/3)
	tailN := room - len(head)
	i := len(s) - tailN
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return strings.TrimSpace(head) + ell + strings.TrimSpace(s[i:])
}
