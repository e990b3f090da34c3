package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/gate"
)

// TestREADME_GateSnippetIsWhatInstallWrites holds the README's gate
// snippet to `hooks install --gate` with its default budget: the same
// two events, command and timeout.
func TestREADME_GateSnippetIsWhatInstallWrites(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var snippet string
	for _, block := range strings.Split(string(b), "```json\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.Contains(block, `"PreToolUse"`) && strings.Contains(block, "--gate") {
			snippet = block
			break
		}
	}
	if snippet == "" {
		t.Fatal("README: no settings.json snippet wiring the gate")
	}
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
	if w.Timeout <= int((gate.DefaultBudget + hookGateMargin).Seconds()) {
		t.Errorf("timeout %d s: want longer than the budget %v and the hook's margin %v", w.Timeout, gate.DefaultBudget, hookGateMargin)
	}
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
