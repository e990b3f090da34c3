// Package codex turns what Codex CLI writes into Logbook observations:
// rollout lines and notify payloads become events.Observation values
// whose Signals the same session reducer as Claude Code's decides from.
// The package parses and normalizes; it never decides phases.
//
// Source formats followed, checked against recordings of Codex CLI 0.130.0
// and 0.144.4 and a legacy rollout:
//
//   - Rollouts: the JSON Lines files Codex CLI appends under
//     ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl.
//     Since Codex CLI 0.40 each line is an envelope {timestamp, ordinal?,
//     type, payload} whose type names a codex-rs RolloutItem:
//     session_meta (SessionMeta: id, forked_from_id, cli_version, cwd,
//     source, git), turn_context (TurnContext: turn_id, cwd, model,
//     approval_policy, sandbox_policy), response_item (ResponseItem:
//     message, reasoning, function_call, function_call_output,
//     custom_tool_call, custom_tool_call_output, local_shell_call,
//     web_search_call, compaction), event_msg (EventMsg: task_started,
//     task_complete, turn_aborted, user_message, agent_message,
//     token_count, exec_command_end, exec and patch approval requests,
//     context_compacted, item_completed, error, …), compacted, and in
//     0.144 world_state. Rollouts written before 0.40 (the legacy
//     format) have no envelope: a first line {id, timestamp,
//     instructions, git}, then {"record_type":"state"} markers and bare
//     response items. Parser.Line maps one line of either format.
//   - Notify: the JSON object Codex CLI passes as the last argument of
//     the program configured as `notify` in ~/.codex/config.toml (0.2x
//     to 0.144: one event type, "agent-turn-complete", with thread-id,
//     turn-id, cwd, input-messages, last-assistant-message).
//     Parser.Notify maps one payload.
//
// Every field is treated as optional except where a doc comment says
// otherwise: the formats grew over versions. A line that is not a JSON
// object is an error; a payload type this package does not know is not:
// the observation is recorded, flagged in Observation.Problems, and
// yields no signal.
//
// Redaction and caps are every agent's (ingest.ParserConfig, the same as
// Claude Code's): Raw, signal texts and Meta strings are redacted, Raw is
// cut to Config.MaxRaw. Reading, importing and following rollouts is the
// agent-neutral engine's (adapters/ingest).
package codex
