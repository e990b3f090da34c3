package claude

import "slices"

// hookEvents are the Claude Code hook events Parser.Hook reads into
// signals, in the order a session meets them; toolEvents are those that
// take a matcher on the tool's name.
var (
	hookEvents = []string{
		"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PermissionDenied",
		"PostToolUse", "PostToolUseFailure", "Notification", "SubagentStart", "SubagentStop",
		"Stop", "StopFailure", "PreCompact", "PostCompact", "SessionEnd",
	}
	toolEvents = []string{"PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse", "PostToolUseFailure"}
)

// HookEvents returns the Claude Code hook events (hook_event_name, as
// named in Claude Code's hooks reference, v2.1.x) that Parser.Hook
// understands, in the order a session meets them: the events a
// settings.json should wire to Logbook's hook. Any other event parses
// to no signals and a Problems entry "unknown hook event". The slice is
// the caller's.
func HookEvents() []string { return slices.Clone(hookEvents) }

// ToolHookEvent reports whether hook event ev is one of HookEvents that
// fires for a tool call and so takes a matcher on the tool's name in
// settings.json ("*": every tool).
func ToolHookEvent(ev string) bool { return slices.Contains(toolEvents, ev) }

// lineTypes are the transcript line types Parser.Line knows, and the
// kinds it gives a line of none or an unreadable one.
var lineTypes = []string{
	"user", "assistant", "system", "attachment", "queue-operation", "permission-mode",
	"ai-title", "custom-title", "summary", "file-history-snapshot", "last-prompt", "progress",
	"mode", "agent-name", "pr-link", "worktree-state", "tag", "untyped", "invalid",
}

// knownKind reports whether kind is a hook event or transcript line type
// this package knows: vocabulary, not input to redact.
func knownKind(kind string) bool {
	return slices.Contains(hookEvents, kind) || slices.Contains(lineTypes, kind)
}
