package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLostMessageSaid: a message in the middle of the log, the only one
// holding its marker, damaged in place while serve is stopped (one byte
// of its block file flipped) is in none of the server's counts, so
// serve's check at start passes it. serve then says at ERROR, naming its
// sequence and `logbook verify`, and goes on (no checkpoint statement
// covers the message, so no read names it); `replay --verify` prints
// the hashes equal and still exits 1 naming the sequence; doctor fails
// its server check naming it; the checkpoints stop, so that none is
// signed over the hole.
func TestLostMessageSaid(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	// No checkpoint is signed while the sessions are appended: a
	// statement covering the lost message would have reads name it.
	serve := func(every string, extra ...string) (stop func(), logs *syncBuffer) {
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		logs = &syncBuffer{}
		go func() {
			args := append([]string{"--data", data, "serve", "--workers", "0", "--checkpoint-every", every, "--checkpoint-interval", "1h"}, extra...)
			served <- runCLI(ctx, args, strings.NewReader(""), logs, logs)
		}()
		waitServer(t, dataDir(data))
		var once sync.Once // stopped by hand and by a defer
		return func() {
			once.Do(func() {
				cancel()
				if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("serve: %v\n%s", err, logs.String())
				}
			})
		}, logs
	}
	stop, logs := serve("1000000")
	promptSession(t, t.Context(), data, "lost-1", "/work/one")
	stop()
	if strings.Contains(logs.String(), "lost") {
		t.Fatalf("serve on a whole log says something is lost:\n%s", logs.String())
	}
	// Past serve's last checkpoint (signed as it stopped), a session of
	// one prompt, imported, and then another.
	projects := t.TempDir()
	for i, prompt := range []string{"LOSTMARK-two", "three"} {
		sid := fmt.Sprintf("5e551011-0000-4000-8000-00000000010%d", i)
		line := fmt.Sprintf(`{"isSidechain":false,"userType":"external","entrypoint":"cli","cwd":"/work/x","sessionId":%q,"version":"2.1.140","type":"user","uuid":"00000000-0000-4000-8000-00000000010%d","timestamp":"2026-05-01T10:00:01.000Z","message":{"role":"user","content":%q},"promptId":"P1"}`+"\n", sid, i, prompt)
		if err := os.MkdirAll(filepath.Join(projects, "-work-x"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(projects, "-work-x", sid+".jsonl"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		cli(t, data, "import", "claude", projects)
	}
	seq := seqOf(t, data, "LOSTMARK-two")
	flipIn(t, data, "LOSTMARK-two")
	named := fmt.Sprintf("seq %d", seq)

	// Now a checkpoint is due at every message appended: once the walk
	// found the hole, none is signed over it.
	stop, logs = serve("1")
	defer stop()
	// The walk's own line: the checkpoints' STOPPED line, which names
	// the loss too, may come first (the hole is recorded, then said).
	errorLine := func() string {
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, "lost 1 of seq 1..") && !strings.Contains(line, "STOPPED") {
				return line
			}
		}
		return ""
	}
	deadline := time.Now().Add(10 * time.Second)
	for errorLine() == "" {
		if time.Now().After(deadline) {
			t.Fatalf("serve said nothing of the lost message within 10s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	said := errorLine()
	t.Logf("serve: %s", said)
	if !strings.Contains(said, "level=ERROR") || !strings.Contains(said, named+" ") || !strings.Contains(said, "logbook verify") {
		t.Errorf("serve's line on the lost message wants ERROR, %q and `logbook verify`:\n%s", named, said)
	}

	promptSession(t, t.Context(), data, "after-the-hole", "/work/four")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "STOPPED: stream LOGBOOK lost 1 of seq 1.."); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve's checkpoints did not stop on the hole within 10s of a message appended past it:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), "no checkpoint is signed or co-signed over a log with a hole") {
		t.Errorf("serve's checkpoints stopped without saying why:\n%s", logs.String())
	}

	out, errOut, code := cliExit(t, data, "replay", "--verify")
	t.Logf("replay --verify: exit %d\n%s%s", code, out, errOut)
	if code != 1 || !strings.Contains(out, "equal\n") || !strings.Contains(out, "MISSING: ") || !strings.Contains(errOut, "not whole") || !strings.Contains(errOut, named) {
		t.Errorf("replay --verify on a log that lost %s: exit %d, want 1 naming it:\n%s%s", named, code, out, errOut)
	}
	out, _, _ = cliExit(t, data, "--json", "replay", "--verify")
	if !strings.Contains(out, `"missing": 1`) || !strings.Contains(out, fmt.Sprintf(`"missing_seqs": [
    %d
  ]`, seq)) {
		t.Errorf("replay --verify --json names no missing seq %d:\n%s", seq, out)
	}

	out, _, _ = cliExit(t, data, "doctor")
	var line string
	for l := range strings.Lines(out) {
		if strings.Contains(l, "server ") {
			line = l
		}
	}
	if !strings.HasPrefix(line, "fail") || !strings.Contains(line, "not whole") || !strings.Contains(line, named) || !strings.Contains(out, "logbook verify") {
		t.Errorf("doctor's server check on a log that lost %s wants a failure naming it:\n%s", named, out)
	}

	// --accept-stream-loss accepts it as it accepts a loss the server
	// counts: the projection set aside and rebuilt, the loss recorded in
	// stream.json; the starts after are quiet and replay --verify passes.
	stop()
	stop, logs = serve("1000000", "--accept-stream-loss")
	if !strings.Contains(logs.String(), "--accept-stream-loss: projection set aside") || !strings.Contains(logs.String(), named) {
		t.Errorf("serve --accept-stream-loss on a log that lost %s:\n%s\nwant the projection set aside, naming it", named, logs.String())
	}
	stop()
	stop, logs = serve("1000000")
	time.Sleep(time.Second) // the walk of a log of a few dozen messages
	if strings.Contains(logs.String(), "lost 1 of seq") {
		t.Errorf("a start after --accept-stream-loss still says the loss:\n%s", logs.String())
	}
	if out, errOut, code := cliExit(t, data, "replay", "--verify"); code != 0 {
		t.Errorf("replay --verify after --accept-stream-loss: exit %d\n%s%s", code, out, errOut)
	}
}
