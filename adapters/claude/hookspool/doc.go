// Package hookspool is what a Claude Code hook process needs, and no
// more, so that a binary run for every hook event (logbook-hook) links
// only the standard library (no crypto package), golang.org/x/sys/unix,
// ULIDs and the event types: the check and
// cut of a hook payload before it is sent (PrepareHook, CheckHook), the
// durable spool it is kept in when no server takes it (Spool), the
// agent process it ran under (AgentProcess), and the safe read of a
// small file (ReadRegular).
//
// On a hook's common path (PrepareHook, AgentProcess, HasPending,
// ReadRegular) it reads files, /proc and the spool's names
// with plain system calls, not os.File (no network poller), and decodes
// no JSON by reflection, whose first use costs a short-lived process a
// good part of a millisecond.
//
// It links no redaction rules: Spool methods that keep a payload aside
// redacted take the caller's Redactor (adapters/claude's satisfies it).
// Package adapters/claude re-exports these names for its own callers.
package hookspool
