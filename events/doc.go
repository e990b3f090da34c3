// Package events is Logbook's shared vocabulary: the envelope every message
// on the log carries, the typed payloads of each event type, the registry
// that decodes them strictly, upcasters for old schema versions, and the
// sentinel errors every layer reports through.
//
// The wire contract is the JSON envelope of DESIGN.md:
//
//	{"id":"01JDQ…","type":"session.transitioned","v":1,
//	 "agg":{"kind":"session","id":"3f2a…"},"ver":12,
//	 "at":"2026-11-30T10:00:00.123456Z",
//	 "cause":{"kind":"hook","event":"PreToolUse","detail":"Bash","ref":"01JDQ…"},
//	 "corr":"turn-7","host":"build-3","actor":"claude-code","data":{…}}
//
// Field names are frozen once stored; a change to a payload's shape bumps its
// schema version and registers an upcaster from the old one. The golden files
// in testdata/events pin every type's wire form.
//
// The package imports only the standard library and ulid, so every other
// package may import it.
package events
