// Package hookspool is what a Claude Code hook process needs, and no
// more, so that a binary run for every hook event (logbook-hook) links
// only the standard library, ULIDs and the event types: the check and
// cut of a hook payload before it is sent (PrepareHook, CheckHook), the
// durable spool it is kept in when no server takes it (Spool), the
// agent process it ran under (AgentProcess), and the safe read of a
// small file (ReadRegular).
//
// It links no redaction rules: Spool methods that keep a payload aside
// redacted take the caller's Redactor (adapters/claude's satisfies it).
// Package adapters/claude re-exports these names for its own callers.
package hookspool
