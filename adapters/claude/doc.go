// Package claude turns what Claude Code writes into Logbook observations:
// transcript lines and hook payloads become events.Observation values
// whose Signals a session reducer decides from. The package parses and
// normalizes; it never decides phases.
//
// Source formats followed (Claude Code v2.1.x, checked against recordings
// of v2.1.119–v2.1.150):
//
//   - Transcripts: the JSON Lines files Claude Code appends under
//     ~/.claude/projects/<project>/<session-id>.jsonl, one JSON object per
//     line with a top-level "type" (user, assistant, system, attachment,
//     queue-operation, permission-mode, ai-title, …), and the subagent
//     transcripts beside them in <session-id>/subagents/agent-<id>.jsonl.
//     ParseLine maps one line; Discover finds the files; the agent-neutral
//     engine (adapters/ingest) reads, imports and follows them
//     (Ingester, which embeds ingest.Ingester).
//   - Hooks: the JSON object Claude Code writes to a hook command's stdin
//     (the hooks reference's common fields plus per-event fields, keyed by
//     "hook_event_name"). ParseHook maps one payload; Spool keeps payloads
//     durably until they are delivered.
//
// Every field of both formats is treated as optional: the formats grew
// over versions. A line or payload that is not JSON is an error; a field of
// an unexpected JSON type in a transcript line, or a line type or hook
// event this package does not know, is not: the observation is still
// returned, without signals from that part, and says what it could not use
// in Observation.Problems.
//
// Before an observation leaves the package, Raw, its Key, every Sig text,
// id and name and every Meta string pass through a Redactor (package
// redact: secret shapes are replaced with [REDACTED:<rule>]; Raw, being
// JSON, over the decoded text of its strings) and Raw is cut to
// Config.MaxRaw bytes.
//
// The signals each input yields are listed in the doc comments of
// ParseLine and ParseHook.
package claude
