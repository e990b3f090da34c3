package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/execsock"
)

// TestExecSocket_RulesApplyToTheNextExec: an exec served on the exec
// socket checks its request by redact.txt as it is when the exec begins,
// so a rule written between two execs holds for the second: the same
// argument runs first and is refused as a secret after.
func TestExecSocket_RulesApplyToTheNextExec(t *testing.T) {
	t.Parallel()
	data, ws := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	serveInProcess(t, data, "--grace", "300ms", "--reconcile-every", "0", "--workers", "1")
	const sid = "0c7e4a11-0000-4000-8000-00000000ac4f"
	promptSession(t, ctx, data, sid, ws)
	call := func() (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		req := execsock.Request{Args: []string{"--session", sid, "--mode", "full_access", "--workspace", ws, "--no-env", "--", "true", "acme-1234567"}, Cwd: ws, Env: []string{}}
		code, err := execsock.Call(data, req, &out, &errb)
		if err != nil {
			t.Fatalf("exec socket: %v", err)
		}
		return code, errb.String()
	}
	if code, stderr := call(); code != 0 {
		t.Fatalf("exec before the rule: exit %d, want 0\n%s", code, stderr)
	}
	if err := os.WriteFile(filepath.Join(data, "redact.txt"), []byte("acme-[0-9]{7}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr := call()
	if code == 0 || !strings.Contains(stderr, "looks like a secret") {
		t.Errorf("exec after the rule: exit %d, stderr %q; want a refusal of argv[1] as a secret", code, stderr)
	}
}
