package main

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/gate/hookgate"
)

// readmeSnippet returns the first of the README's JSON blocks that holds
// every one of has; the test fails when there is none (what names it).
func readmeSnippet(t *testing.T, what string, has ...string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(b), "```json\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if !slices.ContainsFunc(has, func(h string) bool { return !strings.Contains(block, h) }) {
			return block
		}
	}
	t.Fatalf("README: no settings.json snippet wiring %s", what)
	return ""
}

// TestREADME_SettingsSnippetIsWhatInstallWrites holds the README's
// settings.json snippet to `hooks install`: the same events (every one
// the Claude Code adapter understands), matchers and command.
func TestREADME_SettingsSnippetIsWhatInstallWrites(t *testing.T) {
	snippet := readmeSnippet(t, "logbook-hook claude", `"SessionStart"`, `"logbook-hook claude"`)
	want, err := settings.Edit(nil, settings.Wires{Recorder: "logbook-hook claude"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON([]byte(snippet), want) {
		t.Errorf("README's settings snippet is not what hooks install writes; want:\n%s\ngot:\n%s", want, snippet)
	}
}

// TestREADME_GateSnippetIsWhatInstallWrites holds the README's gate
// snippet to `hooks install --gate` with its default budget: the same
// two events, command and timeout.
func TestREADME_GateSnippetIsWhatInstallWrites(t *testing.T) {
	t.Setenv("LOGBOOK_DATA", "") // no data dir given: the snippet has no --data
	snippet := readmeSnippet(t, "the gate", `"PreToolUse"`, "--gate")
	w := installWires(&globals{}, hooksFlags{gate: true, budget: gate.DefaultBudget})
	_, rest, _ := strings.Cut(w.Gate, " hook ")
	w.Gate = "logbook hook " + rest // as PATH finds it
	all, err := settings.Edit(nil, w, "")
	if err != nil {
		t.Fatal(err)
	}
	var written struct {
		Hooks map[string]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(all, &written); err != nil {
		t.Fatal(err)
	}
	want := map[string]json.RawMessage{}
	for _, ev := range []string{gate.EventPreToolUse, gate.EventPermissionRequest} {
		want[ev] = written.Hooks[ev]
	}
	wantJSON, err := json.Marshal(map[string]any{"hooks": want})
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON([]byte(snippet), wantJSON) {
		t.Errorf("README's gate snippet is not what hooks install --gate writes for its events; want:\n%s\ngot:\n%s", wantJSON, snippet)
	}
	if w.Timeout <= int((gate.DefaultBudget + hookgate.Margin).Seconds()) {
		t.Errorf("timeout %d s: want longer than the budget %v and the hook's margin %v", w.Timeout, gate.DefaultBudget, hookgate.Margin)
	}
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
