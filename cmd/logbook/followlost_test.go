package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// command output --follow whose serve dies says so in the user's terms:
// the server it read from stopped, the command may still run, and how to
// come back; not nats.go's "messages iterator closed".
func TestCommandOutputFollow_ServeDies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs serve")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	s, srv := followSetup(t)
	ctx := t.Context()
	ch, out, err := s.start(ctx, nil, "command", "output", "follow-1", "--follow")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // following
	killServe(t, srv, ch, 60*time.Second, "command output --follow", out)
	got := out.String()
	if ch.err == nil || strings.Contains(got, "iterator closed") || !strings.Contains(got, "did `logbook serve` stop?") ||
		!strings.Contains(got, "logbook command output follow-1 --follow --after") {
		t.Errorf("command output --follow after serve died: %v\n%s", ch.err, got)
	}
}

// command output --follow that finds no serve answering (it died before
// the follow reached it) opens the data dir directly, where no worker
// can add to the command's output: it prints the output so far and ends
// saying so, with the offset to come back from, rather than wait for an
// end nothing can append.
func TestCommandOutputFollow_NoServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs serve")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	s, srv := followSetup(t)
	ctx := t.Context()
	for deadline := time.Now().Add(30 * time.Second); ; { // its first line is on the log
		out, err := s.run(ctx, nil, "command", "output", "follow-1")
		if err == nil && bytes.Contains(out, []byte("first")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no output of follow-1 30 s after it started: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	srv.kill()
	ch, out, err := s.start(ctx, nil, "command", "output", "follow-1", "--follow")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch.gone:
	case <-time.After(60 * time.Second):
		t.Fatalf("command output --follow still runs 60 s after it started with no serve:\n%s", out.String())
	}
	got := out.String()
	if ch.err == nil || !strings.HasPrefix(got, "first\n") || !strings.Contains(got, "did `logbook serve` stop?") ||
		!strings.Contains(got, "logbook command output follow-1 --follow --after 6`") {
		t.Errorf("command output --follow with no serve: %v\n%s", ch.err, got)
	}
	// With --json the offset to come back from is the output's end too,
	// not the --after given.
	js, err := s.run(ctx, nil, "command", "output", "follow-1", "--follow", "--json")
	if err == nil || !bytes.Contains(js, []byte(`"Pos":0`)) || !bytes.Contains(js, []byte("logbook command output follow-1 --follow --after 6`")) {
		t.Errorf("command output --follow --json with no serve: %v\n%s", err, js)
	}
}

// followSetup starts serve on a soak of its own with one imported
// session and, in it, command follow-1 (read_only), which prints "first"
// and sleeps a minute. It returns the soak and the running serve.
func followSetup(t *testing.T) (*soak, *soakChild) {
	t.Helper()
	s := newSoak(t, soakBuild(t), 1)
	ctx := t.Context()
	srv, _ := s.startServe(ctx)
	if err := s.ts[0].Grow(5, false); err != nil {
		t.Fatal(err)
	}
	if out, err := s.run(ctx, nil, "import", "claude", s.dir); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	ws := t.TempDir()
	sess := s.ts[0].Session
	for deadline := time.Now().Add(30 * time.Second); ; { // the import reaches serve's view
		out, err := s.run(ctx, nil, "sessions", "--all")
		if err == nil && bytes.Contains(out, []byte(sess[:8])) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s not listed 30 s after the import: %v\n%s", sess, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out, err := s.run(ctx, nil, "exec", "--session", sess, "--mode", "read_only", "--workspace", ws, "--id", "follow-1", "--wait", "0",
		"--", "sh", "-c", "echo first; sleep 60"); err != nil {
		t.Fatalf("exec: %v\n%s", err, out)
	}
	return s, srv
}
