package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCheckPolicies_ReportsWarnings: serve's log names a policy in force
// that carries a warning (a Bash pattern with ":*" before its end), at
// WARN, with its file, line and column, once per version of the file:
// checked again unchanged it says nothing more; fixed, nothing; the
// warning back, it says it again.
func TestCheckPolicies_ReportsWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pol := filepath.Join(dir, PolicyFile)
	var (
		mu    sync.Mutex
		lines []string
	)
	g := &Gate{Policies: &Policies{DataDir: dir}, Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}}
	logged := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
	version := 0
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(pol, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		// Each version a modification time of its own: the file is read
		// again when its size or time changes.
		version++
		at := time.Unix(1_700_000_000+int64(version), 0)
		if err := os.Chtimes(pol, at, at); err != nil {
			t.Fatal(err)
		}
	}
	const warned = "deny = [\"Bash(git:*push)\"]\n"
	write(warned)
	g.CheckPolicies()
	got := logged()
	if len(got) != 1 || !strings.HasPrefix(got[0], "WARN: policy "+pol+":1:") || !strings.Contains(got[0], `":*" inside a pattern`) || !strings.Contains(got[0], "in force") {
		t.Fatalf("a policy with a warning: logged %q, want one WARN line naming %s:1:", got, pol)
	}
	g.CheckPolicies()
	if n := len(logged()); n != 1 {
		t.Fatalf("checked again, unchanged: %d lines, want the one: %q", n, logged())
	}
	write("deny = [\"Bash(git push:*)\"]\n")
	g.CheckPolicies()
	if n := len(logged()); n != 1 {
		t.Fatalf("fixed: %d lines, want still the one: %q", n, logged())
	}
	write(warned)
	g.CheckPolicies()
	if got := logged(); len(got) != 2 || got[1] != got[0] {
		t.Fatalf("the warning back: logged %q, want it said again", got)
	}
}
