package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExec_KeyBlockPrintedSlowly: a script in the workspace prints a
// private key line by line, with pauses longer than the worker's idle
// flush between the lines, run by `logbook exec` on pipes and on a PTY:
// the lb.out messages read straight from the log hold one
// [REDACTED:private_key] and nothing of the key's body or END line.
func TestExec_KeyBlockPrintedSlowly(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("commands need bubblewrap")
	}
	t.Parallel()
	data, ws := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	serveInProcess(t, data, "--grace", "300ms", "--workers", "1")
	cli := func(args ...string) (string, error) {
		var out syncBuffer
		err := runCLI(ctx, append([]string{"--data", data}, args...), strings.NewReader(""), &out, &out)
		return out.String(), err
	}
	const sid = "0c7e4a11-0000-4000-8000-00000000be61"
	promptSession(t, ctx, data, sid, ws)
	script := "echo \"-----BEGIN RSA PRIVATE KEY-----\"; sleep 0.4; echo MIIEowIBAAKCsecretbody; sleep 0.4; echo \"-----END RSA PRIVATE KEY-----\"; echo done\n"
	if err := os.WriteFile(filepath.Join(ws, "k.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := execPipeAndPTY(t, cli, "key", []string{"--session", sid, "--workspace", ws}, "sh", "k.sh")
	for _, r := range runs {
		got := storedOutput(t, ctx, data, r.id)
		text := strings.ReplaceAll(string(got), "\r\n", "\n")
		if text != "[REDACTED:private_key]\ndone\n" {
			t.Errorf("%s: lb.out holds %q, want the key block redacted whole", r.id, got)
		}
	}
}
