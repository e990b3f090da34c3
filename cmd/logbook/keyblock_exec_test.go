package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
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
	for _, id := range []string{"key-pipe", "key-pty"} {
		args := []string{"exec", "--session", sid, "--workspace", ws, "--id", id, "--wait", "30s"}
		if id == "key-pty" {
			args = append(args, "--tty")
		}
		if out, err := cli(append(args, "--", "sh", "k.sh")...); err != nil {
			t.Fatalf("exec %s: %v\n%s", id, err, out)
		}
	}
	b, err := openBackend(ctx, &globals{data: data})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, id := range []string{"key-pipe", "key-pty"} {
		var got bytes.Buffer
		for m, err := range b.log.ReadRaw(ctx, natslog.OutputSubject(id), 1) {
			if err != nil {
				t.Fatal(err)
			}
			got.Write(m.Data)
		}
		text := strings.ReplaceAll(got.String(), "\r\n", "\n")
		if text != "[REDACTED:private_key]\ndone\n" {
			t.Errorf("%s: lb.out holds %q, want the key block redacted whole", id, got.Bytes())
		}
	}
}
