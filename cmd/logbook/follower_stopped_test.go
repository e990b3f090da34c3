package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestFollowerStopped_NoLogStartedThere: a follower's data dir whose
// serve stopped holds the projection of another server's log and no log
// of its own. A read there (with a reader's credentials and no URL, or
// with none) and a serve there without --nats-url each say where its log
// is and start none: no empty log is made, which the projection would
// then be refused against. While it runs, a read without credentials is
// told to pass them. The follower started again as before follows the
// log as it did.
func TestFollowerStopped_NoLogStartedThere(t *testing.T) {
	t.Parallel() // its own data dirs and serves; it mostly waits on them
	bin := soakBuild(t)
	origin, follower := t.TempDir(), filepath.Join(t.TempDir(), "follower")
	start := func(args ...string) *exec.Cmd {
		c := exec.Command(bin, args...)
		sandboxtest.DieWithTest(c)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	stop := func(c *exec.Cmd) {
		_ = c.Process.Signal(syscall.SIGINT)
		_ = c.Wait()
	}
	run := func(stdin string, args ...string) (string, error) {
		c := exec.Command(bin, args...)
		c.Stdin = strings.NewReader(stdin)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	o := start("serve", "--data", origin, "--http", "off", "--workers", "0")
	defer stop(o)
	waitServer(t, dataDir(origin))
	if out, err := run(fmt.Sprintf(`{"session_id":"followed","hook_event_name":"SessionStart","cwd":%q,"source":"startup"}`, t.TempDir()),
		"hook", "claude", "--data", origin); err != nil {
		t.Fatalf("hook: %v\n%s", err, out)
	}
	si, ok := dataDir(origin).readServeInfo()
	if !ok {
		t.Fatal("no serve.json in the origin's data dir")
	}
	followArgs := []string{"serve", "--data", follower, "--nats-url", si.URL, "--creds", filepath.Join(origin, "creds-follower.json"),
		"--role", "reader", "--http", "off"}
	sessionsSeen := func() bool {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if out, err := run("", "sessions", "--data", follower, "--creds", filepath.Join(origin, "creds-reader.json")); err == nil && strings.Contains(out, "followed") {
				return true
			}
		}
		return false
	}
	f := start(followArgs...)
	if !sessionsSeen() {
		stop(f)
		t.Fatal("the follower never listed the origin's session")
	}
	// While it runs, a command without credentials is told to pass them.
	// Waiting for its serve cannot help: it is said at once.
	if out, err := run("", "sessions", "--data", follower); err == nil || !strings.Contains(out, "pass --creds FILE") || strings.Contains(out, "waiting") {
		t.Errorf("logbook sessions on a running follower's data dir without credentials: %v\n%s\nwant an error saying to pass --creds, with no wait", err, out)
	}
	// A hook pointed at the follower's data dir delivers nothing (a
	// reader takes no hooks) and keeps nothing (it never delivers a
	// spool): it exits 1 saying so, whatever its credentials, from
	// logbook and from logbook-hook, with the spool empty or not.
	hook := `{"session_id":"misdirected","hook_event_name":"SessionStart","cwd":"/tmp","source":"startup"}`
	hookBin := hookBuild(t, bin)
	for _, args := range [][]string{
		{bin, "hook", "claude", "--data", follower},
		{bin, "hook", "claude", "--data", follower, "--creds", filepath.Join(origin, "creds-reader.json")},
		{bin, "hook", "claude", "--data", follower, "--creds", filepath.Join(origin, "creds-writer.json")},
		{bin, "hook", "codex", "--data", follower},
		{hookBin, "claude", "--data", follower},
	} {
		c := exec.Command(args[0], args[1:]...)
		c.Stdin = strings.NewReader(hook)
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "is a follower's (its serve runs --role reader") {
			t.Errorf("%s on a running follower's data dir: %v\n%s\nwant exit 1 saying it is a follower's", strings.Join(args, " "), err, out)
		}
		if kept, _ := filepath.Glob(filepath.Join(follower, "spool", "*.json")); len(kept) > 0 {
			t.Errorf("%s kept %s in the follower's spool", strings.Join(args, " "), kept)
		}
	}
	// A gated call there is denied at once, saying where the gate is,
	// and nothing is kept.
	pre := `{"session_id":"misdirected","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1","cwd":"/tmp"}`
	for _, args := range [][]string{
		{bin, "hook", "claude", "--gate", "--budget", "1m", "--data", follower},
		{hookBin, "claude", "--gate", "--budget", "1m", "--data", follower},
	} {
		c := exec.Command(args[0], args[1:]...)
		c.Stdin = strings.NewReader(pre)
		out, err := c.Output()
		if err != nil || !strings.Contains(string(out), `"permissionDecision":"deny"`) || !strings.Contains(string(out), "is a follower's") {
			t.Errorf("%s on a running follower's data dir: %v\n%s\nwant a deny saying it is a follower's", strings.Join(args, " "), err, out)
		}
		if kept, _ := filepath.Glob(filepath.Join(follower, "spool", "*.json")); len(kept) > 0 {
			t.Errorf("%s kept %s in the follower's spool", strings.Join(args, " "), kept)
		}
	}
	stop(f)
	// Stopped, the follower's data dir still says whose it is: a hook
	// there keeps nothing either (a reader started again would never
	// deliver it).
	for _, args := range [][]string{
		{bin, "hook", "claude", "--data", follower},
		{hookBin, "claude", "--data", follower},
	} {
		c := exec.Command(args[0], args[1:]...)
		c.Stdin = strings.NewReader(hook)
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "is a follower's") {
			t.Errorf("%s on a stopped follower's data dir: %v\n%s\nwant exit 1 saying it is a follower's", strings.Join(args, " "), err, out)
		}
		if kept, _ := filepath.Glob(filepath.Join(follower, "spool", "*.json")); len(kept) > 0 {
			t.Errorf("%s kept %s in the stopped follower's spool", strings.Join(args, " "), kept)
		}
	}

	for _, args := range [][]string{
		{"sessions", "--data", follower, "--creds", filepath.Join(origin, "creds-reader.json")},
		{"sessions", "--data", follower},
		{"serve", "--data", follower, "--http", "off", "--workers", "0"},
	} {
		out, err := run("", args...)
		if err == nil || !strings.Contains(out, "follows the log at nats://") || !strings.Contains(out, "--nats-url") {
			t.Errorf("logbook %s on a stopped follower's data dir: %v\n%s\nwant an error saying where its log is", strings.Join(args, " "), err, out)
		}
		if _, err := os.Stat(filepath.Join(follower, "jetstream")); err == nil {
			t.Fatalf("logbook %s made a log in the follower's data dir", strings.Join(args, " "))
		}
	}

	// A payload kept in the spool before (by a hook that ran while no
	// serve did) is never delivered by a reader: its start says so.
	if err := os.MkdirAll(filepath.Join(follower, "spool"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(follower, "spool", "01KKKKKKKKKKKKKKKKKKKKKKKK.json"), []byte(`{"session_id":"misdirected","hook_event_name":"SessionStart"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "follower.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	f = exec.Command(bin, followArgs...)
	f.Stdout, f.Stderr = logFile, logFile
	sandboxtest.DieWithTest(f)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	defer stop(f)
	if !sessionsSeen() {
		t.Fatal("the follower started again does not list the origin's session")
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), `level=WARN msg="the spool `+filepath.Join(follower, "spool")+" holds 1 hook payload, which this serve never delivers") {
		t.Errorf("the follower's start with a payload in its spool:\n%s\nwant a WARN that it is never delivered", b)
	}
}
