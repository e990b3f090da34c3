package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExec_OutputRedactedByRedactTxt: a rule added to the data dir's
// redact.txt while serve runs holds for what sandboxed commands print,
// whether serve's own workers or a `logbook worker` process run them: a
// command under bubblewrap prints a string only that rule matches, whole
// and split across two writes, and the lb.out messages read straight
// from the log do not hold it. exec refuses the same string in argv.
func TestExec_OutputRedactedByRedactTxt(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("commands need bubblewrap")
	}
	for _, tc := range []struct {
		name  string
		serve []string // serve's worker flags
		own   bool     // run a `logbook worker` process
	}{
		{"ServeWorkers", []string{"--workers", "1"}, false},
		{"WorkerProcess", []string{"--workers", "0"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, ws := t.TempDir(), t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			logs := serveInProcess(t, data, append([]string{"--grace", "300ms", "--reconcile-every", "0"}, tc.serve...)...)
			sctx, stop := context.WithCancel(ctx)
			defer stop()
			run := func(args ...string) chan error {
				done := make(chan error, 1)
				go func() {
					done <- runCLI(sctx, append([]string{"--data", data}, args...), strings.NewReader(""), logs, logs)
				}()
				t.Cleanup(func() {
					stop()
					if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("logbook %s: %v", args[0], err)
					}
				})
				return done
			}
			if tc.own {
				run("worker", "--grace", "300ms")
			}
			// The rule comes after the start: serve and the worker follow
			// the file.
			if err := os.WriteFile(filepath.Join(data, "redact.txt"), []byte("# code names\nacme-[0-9]{7}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cli := func(stdin string, args ...string) (string, error) {
				var out syncBuffer
				err := runCLI(ctx, append([]string{"--data", data}, args...), strings.NewReader(stdin), &out, &out)
				return out.String(), err
			}
			const sid = "0c7e4a11-0000-4000-8000-00000000ac3e"
			promptSession(t, ctx, data, sid, ws)

			const whole, split = "acme-1234567", "acme-7731924"
			out, err := cli("", "exec", "--session", sid, "--workspace", ws, "--", "echo", whole)
			if err == nil || !strings.Contains(err.Error(), "argv[1] looks like a secret") {
				t.Errorf("exec with the secret in argv: err %v, want a refusal\n%s", err, out)
			}
			script := `printf 'acme-%s\n' 1234567; printf 'a acme-77'; printf '31924 b\n'`
			runs := execPipeAndPTY(t, func(args ...string) (string, error) { return cli("", args...) },
				"rules", []string{"--session", sid, "--workspace", ws, "--mode", "read_only"}, "sh", "-c", script)
			for _, r := range runs {
				got := storedOutput(t, ctx, data, r.id)
				for _, s := range []string{whole, split} {
					if bytes.Contains(got, []byte(s)) {
						t.Errorf("%s: lb.out holds %s in clear: %q", r.id, s, got)
					}
				}
				if n := bytes.Count(got, []byte("[REDACTED:custom-1]")); n != 2 {
					t.Errorf("%s: %d redactions by redact.txt's rule in %q, want 2", r.id, n, got)
				}
			}
			if strings.Contains(logs.String(), whole) || strings.Contains(logs.String(), split) {
				t.Errorf("the server's or worker's log holds a secret:\n%s", logs.String())
			}
		})
	}
}
