package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/gate"
)

// TestREADME_SettingsSnippetIsWhatInstallWrites holds the README's
// settings.json snippet to `hooks install`: the same events (every one
// the Claude Code adapter understands), matchers and command.
func TestREADME_SettingsSnippetIsWhatInstallWrites(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var snippet string
	for _, block := range strings.Split(string(b), "```json\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.Contains(block, `"SessionStart"`) && strings.Contains(block, `"logbook-hook claude"`) {
			snippet = block
			break
		}
	}
	if snippet == "" {
		t.Fatal("README: no settings.json snippet wiring logbook-hook claude")
	}
	want, err := editSettings(nil, hookWires{recorder: "logbook-hook claude"})
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual([]byte(snippet), want) {
		t.Errorf("README's settings snippet is not what hooks install writes; want:\n%s\ngot:\n%s", want, snippet)
	}
}

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
	_, rest, _ := strings.Cut(w.gate, " hook ")
	w.gate = "logbook hook " + rest // as PATH finds it
	all, err := editSettings(nil, w)
	if err != nil {
		t.Fatal(err)
	}
	_, hooks, err := parseSettings(all)
	if err != nil {
		t.Fatal(err)
	}
	var want object
	for _, ev := range []string{gate.EventPreToolUse, gate.EventPermissionRequest} {
		raw, _ := hooks.get(ev)
		want.set(ev, raw)
	}
	wantJSON, _ := object{{"hooks", mustJSON(t, want)}}.MarshalJSON()
	if !jsonEqual([]byte(snippet), wantJSON) {
		t.Errorf("README's gate snippet is not what hooks install --gate writes for its events; want:\n%s\ngot:\n%s", wantJSON, snippet)
	}
	if w.timeout <= int((gate.DefaultBudget + hookGateMargin).Seconds()) {
		t.Errorf("timeout %d s: want longer than the budget %v and the hook's margin %v", w.timeout, gate.DefaultBudget, hookGateMargin)
	}
}

func mustJSON(t *testing.T, o object) json.RawMessage {
	t.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A build under another name (logbook-dev, the test binary) knows its own
// hook entries by what they run, so `hooks install` run again replaces
// them rather than adding them a second time; another program's hook
// that looks alike is not taken for Logbook's.
func TestIsLogbookHook_AnyName(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	beside := filepath.Join(filepath.Dir(self), "logbook-hook")
	for cmd, want := range map[string]bool{
		shellQuote(self) + " hook claude":                                       true,
		shellQuote(self) + " hook --data '/tmp/a b' claude --gate --budget 90s": true,
		"logbook hook claude":                                                   true,
		"/opt/x/logbook-hook --data /d claude":                                  true,
		shellQuote(beside) + " claude":                                          true,
		"/usr/bin/true hook claude":                                             false,
		"othertool hook claude":                                                 false,
		shellQuote(self) + " sessions":                                          false,
		"'unterminated":                                                         false,
		"":                                                                      false,
	} {
		if got := isLogbookHook(cmd); got != want {
			t.Errorf("isLogbookHook(%q) = %v, want %v", cmd, got, want)
		}
	}
}
