package claude

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestHookEvents_AreTheOnesHookUnderstands holds the list of hook events
// to the parser: each listed event parses without "unknown hook event",
// an event not listed parses with it, and each tool event is one the
// parser reads a tool call from.
func TestHookEvents_AreTheOnesHookUnderstands(t *testing.T) {
	t.Parallel()
	p, err := NewParser(Config{})
	if err != nil {
		t.Fatal(err)
	}
	parse := func(ev string) []string {
		t.Helper()
		payload := fmt.Sprintf(`{"session_id":"5e551011-0000-4000-8000-000000000001","cwd":"/tmp","hook_event_name":%q,"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"ls"},"agent_id":"a1","agent_type":"Explore"}`, ev)
		o, err := p.Hook([]byte(payload))
		if err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
		return o.Problems
	}
	unknown := func(probs []string) bool {
		return slices.ContainsFunc(probs, func(s string) bool { return strings.Contains(s, "unknown hook event") })
	}
	evs := HookEvents()
	if len(evs) != 15 {
		t.Errorf("%d hook events, want 15: %v", len(evs), evs)
	}
	for _, ev := range evs {
		if probs := parse(ev); unknown(probs) {
			t.Errorf("listed event %s: the parser does not know it: %v", ev, probs)
		}
	}
	for _, ev := range []string{"Bogus", "preToolUse", "sessionstart"} {
		if !unknown(parse(ev)) {
			t.Errorf("event %s is not listed, yet the parser reads it: add it to HookEvents", ev)
		}
	}
	for _, ev := range toolEvents {
		if !slices.Contains(evs, ev) {
			t.Errorf("tool event %s is not among HookEvents", ev)
		}
	}
	if ToolHookEvent("Stop") || !ToolHookEvent("PreToolUse") {
		t.Error("ToolHookEvent: Stop is not a tool event; PreToolUse is")
	}
	evs[0] = "changed"
	if HookEvents()[0] != "SessionStart" {
		t.Error("HookEvents returned the package's own slice")
	}
}
