package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/top"
	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestTop_RefusesWithoutATerminal checks top's usage errors: it draws on
// a terminal only, takes no --json, and reads again no oftener than every
// 100ms; each is refused before anything is opened.
func TestTop_RefusesWithoutATerminal(t *testing.T) {
	data := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"top"}, "top draws on a terminal, and standard output is not one"},
		{[]string{"--json", "top"}, "--json: top draws on a terminal"},
		{[]string{"top", "--interval", "0"}, "--interval 0s: want 100ms to 1h"},
		{[]string{"top", "--interval", "100h"}, "--interval 100h0m0s: want 100ms to 1h"},
	} {
		var out, errb bytes.Buffer
		err := runCLI(t.Context(), append([]string{"--data", data}, c.args...), strings.NewReader(""), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != codeUsage {
			t.Errorf("%v: %v (exit %d), want a usage error saying %q", c.args, err, exitCode(err), c.want)
		}
		if out.Len() > 0 {
			t.Errorf("%v printed %q", c.args, out.String())
		}
	}
	// On a terminal, with its keys redirected (`logbook top </dev/null`,
	// `cmd | logbook top`): refused too, rather than a screen no key
	// quits.
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	var errb bytes.Buffer
	err = runCLI(t.Context(), []string{"--data", data, "top"}, strings.NewReader(""), tty, &errb)
	if want := "top reads its keys from a terminal, and standard input is not one"; err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != codeUsage {
		t.Errorf("top with stdin a pipe: %v (exit %d), want a usage error saying %q", err, exitCode(err), want)
	}
	// A terminal that says it takes no escape sequences.
	t.Setenv("TERM", "dumb")
	errb.Reset()
	err = runCLI(t.Context(), []string{"--data", data, "top"}, tty, tty, &errb)
	if want := "TERM=dumb says this terminal does not take"; err == nil || !strings.Contains(err.Error(), want) || exitCode(err) != codeUsage {
		t.Errorf("top with TERM=dumb: %v (exit %d), want a usage error saying %q", err, exitCode(err), want)
	}
	if entries, _ := os.ReadDir(data); len(entries) > 0 {
		t.Errorf("a refused top left %d files in the data dir", len(entries))
	}
}

// TestTop_TmuxAllowIsRecordedAsThePerson runs `logbook top` in tmux
// against a running serve with a gated `git push` waiting for review: the
// review shows first, a (with a reason typed, enter) allows it, the hook
// gets the allow, and the log records the verdict as the person who ran
// top, as `logbook review allow` records it. It skips where tmux is not
// installed, except in CI.
func TestTop_TmuxAllowIsRecordedAsThePerson(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed: .ci/run installs it")
		}
		t.Skip("tmux is not installed")
	}
	bin := soakBuild(t)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "policy.toml"), []byte("review = [\"Bash(git push:*)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serveInProcess(t, data, "--workers", "0")

	// The agent's hook asks the gate and waits for the verdict.
	const sid = "70970000-0000-4000-8000-0000000000a1"
	payload := `{"session_id":"` + sid + `","transcript_path":"/nonexistent/a.jsonl","cwd":"/tmp","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push origin main"},"tool_use_id":"toolu_toppush"}`
	type verdict struct {
		out string
		err error
	}
	hooked := make(chan verdict, 1)
	go func() {
		var out, errb syncBuffer
		err := runCLI(t.Context(), []string{"--data", data, "hook", "claude", "--gate", "--budget", "300s"}, strings.NewReader(payload), &out, &errb)
		hooked <- verdict{out.String() + errb.String(), err}
	}()

	dir := t.TempDir()
	sock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	shell := bin + " --data " + data + " top --interval 300ms 2>" + filepath.Join(dir, "top.err") + "; echo \"top exited $?\"; sleep 600"
	tm("new-session", "-d", "-s", "top", "-x", "160", "-y", "50", shell)
	pane := func() string { return tm("capture-pane", "-p", "-t", "top") }
	waitPane := func(want string) string {
		t.Helper()
		var last string
		for range 1200 {
			if last = pane(); strings.Contains(last, want) {
				return last
			}
			time.Sleep(50 * time.Millisecond)
		}
		errs, _ := os.ReadFile(filepath.Join(dir, "top.err"))
		t.Fatalf("the pane never showed %q; it shows:\n%s\ntop's stderr: %s", want, last, errs)
		return ""
	}

	screen := waitPane("> toolu_toppush")
	for _, want := range []string{"PENDING REVIEWS (1)", "git push origin main", "WAITING (1)", "1 review pending"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	tm("send-keys", "-t", "top", "a")
	waitPane("allow review toolu_toppush (Bash git push origin main)?")
	waitPane("reason: ▏")
	tm("send-keys", "-t", "top", "-l", "release from tmux")
	waitPane("reason: release from tmux")
	// A person's enter comes well after the last key typed: top takes an
	// enter within 10 ms of the key before it for a pasted line break and
	// sends nothing (its burst guard), and the pane can show the reason
	// that soon after top took its last letter.
	time.Sleep(100 * time.Millisecond)
	tm("send-keys", "-t", "top", "Enter")

	var v verdict
	select {
	case v = <-hooked:
	case <-t.Context().Done():
		t.Fatal("the hook never got its verdict")
	}
	if v.err != nil || !strings.Contains(v.out, `"permissionDecision":"allow"`) {
		errs, _ := os.ReadFile(filepath.Join(dir, "top.err"))
		t.Fatalf("hook: %v\n%s\ntop's pane:\n%s\ntop's stderr: %s", v.err, v.out, pane(), errs)
	}
	actor := personActor()
	if !strings.Contains(v.out, "allow by user "+actor) {
		t.Errorf("hook's answer does not name %s:\n%s", actor, v.out)
	}
	waitPane("allow (approved) by user " + actor + ": release from tmux")
	// The list read again has no review left, and the session working.
	screen = waitPane("0 reviews pending")
	if strings.Contains(screen, "PENDING REVIEWS") || !strings.Contains(screen, "WORKING (1)") {
		t.Errorf("after the verdict:\n%s", screen)
	}

	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := runCLI(ctx, []string{"--data", data, "audit", sid}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("audit: %v\n%s", err, errb.String())
	}
	var decided string
	for line := range strings.Lines(out.String()) {
		if strings.Contains(line, "review.decided") {
			decided = line
		}
	}
	for _, want := range []string{"entry=toolu_toppush", "verdict=allow", "decided_by=user:" + actor, `reason="release from tmux"`} {
		if !strings.Contains(decided, want) {
			t.Errorf("the audit's review.decided lacks %s: %q", want, decided)
		}
	}

	// enter opens the session's audit, with the verdict in it; q goes
	// back, and q again quits.
	tm("send-keys", "-t", "top", "Enter")
	waitPane("audit of session " + sid)
	waitPane("review.decided")
	tm("send-keys", "-t", "top", "q")
	waitPane("↑↓ select")
	tm("send-keys", "-t", "top", "q")
	waitPane("top exited 0")
}

// TestTop_ReconnectsToRestartedServe: top's source reads through the data
// dir's serve, which stops and starts again (on a port of its own); the
// next reads reach the new serve, and the header names it, rather than
// "connection closed" until top is started again.
func TestTop_ReconnectsToRestartedServe(t *testing.T) {
	t.Parallel()
	bin := soakBuild(t)
	data := t.TempDir()
	startServe := func() *exec.Cmd {
		c := exec.Command(bin, "serve", "--data", data, "--http", "off", "--workers", "0")
		sandboxtest.DieWithTest(c)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		waitServer(t, dataDir(data))
		return c
	}
	first := startServe()
	g := &globals{data: data, requireServer: true, stdout: io.Discard, stderr: io.Discard}
	err := withAPI(t.Context(), g, func(b *backend, call api.Caller) error {
		src := newTopSource(t.Context(), g, b, call)
		defer src.close()
		if _, err := src.Snapshot(t.Context()); err != nil {
			return fmt.Errorf("first read: %w", err)
		}
		src.follow(b)
		_ = first.Process.Signal(syscall.SIGINT)
		_ = first.Wait()
		second := startServe()
		defer func() { _ = second.Process.Signal(syscall.SIGINT); _ = second.Wait() }()
		var snap top.Snapshot
		var err error
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if snap, err = src.Snapshot(t.Context()); err == nil {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("read after serve started again: %w", err)
		}
		if want := fmt.Sprintf("serve pid %d ", second.Process.Pid); !strings.Contains(snap.Server, want) {
			return fmt.Errorf("header names %q, want %q", snap.Server, want)
		}
		// The change feed follows the new serve's log: a session that
		// starts there is signalled, not only read at the next interval.
		select {
		case <-src.changed:
		default:
		}
		hook := exec.Command(bin, "hook", "claude", "--data", data)
		hook.Stdin = strings.NewReader(fmt.Sprintf(`{"session_id":"after-restart","hook_event_name":"SessionStart","cwd":%q,"source":"startup"}`, t.TempDir()))
		if out, err := hook.CombinedOutput(); err != nil {
			return fmt.Errorf("hook on the new serve: %v\n%s", err, out)
		}
		select {
		case <-src.changed:
		case <-time.After(15 * time.Second):
			return errors.New("no change signalled for a session started on the new serve within 15s")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A caller's staleness is noted from the goroutines top reads and answers
// on at once, and the first stale answer is the one kept.
func TestStaleSeen_Concurrent(t *testing.T) {
	var seen staleSeen
	first := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	seen.note(api.Stale{LogUnavailableSince: &first, AsOfSeq: 1})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			at := first.Add(time.Duration(i+1) * time.Second)
			seen.note(api.Stale{LogUnavailableSince: &at, AsOfSeq: uint64(i + 2)})
			seen.note(api.Stale{})
			_ = seen.first()
		})
	}
	wg.Wait()
	if got := seen.first(); got.AsOfSeq != 1 || !got.LogUnavailableSince.Equal(first) {
		t.Fatalf("first stale answer kept = %+v, want the one as of sequence 1", got)
	}
}
