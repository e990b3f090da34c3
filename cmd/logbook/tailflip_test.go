package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// A byte changed in place in the log's last message: the server still
// counts the message (its index says so) but cannot give it. Every
// command that opens the data dir refuses the log, naming the sequence
// gone, before it reads or appends anything; serve --accept-stream-loss
// rebuilds from the log as it is, and the next serve starts quietly and
// reads the log with every signature checked (the judgment statement
// covers the hole), saying only that no checkpoint is signed over a log
// with a hole.
func TestStreamLoss_TailDamagedInPlace(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	run := func(args ...string) (string, error) {
		var out syncBuffer
		err := runCLI(t.Context(), append([]string{"--data", data}, args...), strings.NewReader(""), &out, &out)
		return out.String(), err
	}
	if out, err := run("import", "claude", "../../testdata/claude/projects"); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	serve := func(args ...string) string {
		ctx, stop := context.WithCancel(context.Background())
		logs := &syncBuffer{}
		served := make(chan error, 1)
		go func() {
			served <- runCLI(ctx, append([]string{"--data", data, "serve", "--workers", "0", "--http", "off", "--checkpoint-every", "1"}, args...), strings.NewReader(""), logs, logs)
		}()
		for up := false; !up; {
			select {
			case err := <-served:
				t.Fatalf("serve %v ended before it was up: %v\n%s", args, err, logs.String())
			case <-time.After(50 * time.Millisecond):
			}
			if si, ok := dataDir(data).readServeInfo(); ok && si.PID > 0 {
				c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				if b, err := openBackend(c, &globals{data: data}); err == nil {
					up = b.remote
					b.Close()
				}
				cancel()
			}
		}
		stop()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("serve %v: %v\n%s", args, err, logs.String())
		}
		return logs.String()
	}
	serve() // its projection and a judgment statement over the whole log
	blks, _ := filepath.Glob(dataDir(data).path("jetstream", "jetstream", "$G", "streams", natslog.StreamName, "msgs", "*.blk"))
	if len(blks) == 0 {
		t.Fatal("no block files")
	}
	blk := blks[len(blks)-1]
	b, err := os.ReadFile(blk)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-30] ^= 1 // inside the last message, before its checksum
	if err := os.WriteFile(blk, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"events", "tail"}, {"import", "claude", "../../testdata/claude/projects"}, {"serve", "--workers", "0", "--http", "off"}} {
		out, err := run(args...)
		if err == nil || exitCode(err) != codeError || !strings.Contains(err.Error(), "the log lost events: stream LOGBOOK ends at seq ") || !strings.Contains(err.Error(), "--accept-stream-loss") {
			t.Fatalf("%v on a log whose last message is damaged: %v\n%s", args, err, out)
		}
	}
	if logs := serve("--accept-stream-loss"); !strings.Contains(logs, "--accept-stream-loss: projection set aside") {
		t.Fatalf("serve --accept-stream-loss said:\n%s", logs)
	}
	// Quiet but for what stays true: no checkpoint is signed over a log
	// with a hole.
	for _, line := range strings.Split(serve(), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") && !strings.Contains(line, "checkpoints: STOPPED: seq ") {
			t.Errorf("serve after the accepted loss: %s", line)
		}
	}
	if out, err := run("replay", "--verify"); err != nil || !strings.Contains(out, "equal") {
		t.Errorf("replay --verify after the accepted loss: %v\n%s", err, out)
	}
}
