package main

import (
	"os"
	"strings"
	"testing"
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
	want, err := editSettings(nil, "logbook-hook claude")
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual([]byte(snippet), want) {
		t.Errorf("README's settings snippet is not what hooks install writes; want:\n%s\ngot:\n%s", want, snippet)
	}
}
