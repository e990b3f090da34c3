package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADME_SettingsSnippetIsWhatInstallWrites holds the README's
// settings.json snippet to what Edit writes for `hooks install`: the same
// events (every one the Claude Code adapter understands), matchers and
// command.
func TestREADME_SettingsSnippetIsWhatInstallWrites(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
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
	want, err := Edit(nil, Wires{Recorder: "logbook-hook claude"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual([]byte(snippet), want) {
		t.Errorf("README's settings snippet is not what hooks install writes; want:\n%s\ngot:\n%s", want, snippet)
	}
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
		if got := IsLogbookHook(cmd, self); got != want {
			t.Errorf("IsLogbookHook(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// shellQuote quotes s for sh, as the binary writes a hook's command line.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
