package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

// A settings file over MaxFileBytes is refused naming its size, not read
// whole into memory.
func TestReadFile_Oversized(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := HooksIn(path, "/usr/local/bin/logbook"); err == nil || !strings.Contains(err.Error(), "16777217 bytes, over 16777216") {
		t.Errorf("HooksIn on a %d-byte file: %v", MaxFileBytes+1, err)
	}
	if err := os.Truncate(path, 2); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(path); err != nil || string(b) != "{}" {
		t.Errorf("ReadFile of {}: %q, %v", b, err)
	}
}
