package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/adapters/redact/redacttest"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a server
// and its workers.
type syncBuffer = natslogtest.Buffer

// placed returns text in every position the table covers: on its own
// line, after a tab, inside a JSON document printed as text, inside a
// URL, and (for key blocks) as the multi-line block itself.
func placed(sh redacttest.Shape) string {
	js, _ := json.Marshal(map[string]string{"content": "x\n" + sh.Text + "\ty"})
	parts := []string{
		"own line:\n" + sh.Text + "\n",
		"tab:\t" + sh.Text + "\tend",
		"json: " + string(js),
	}
	if !sh.MultiLine && !strings.ContainsAny(sh.Text, " \n") {
		parts = append(parts, "url: https://example.invalid/cb?state=1&code="+sh.Text+"&x=2")
	}
	return strings.Join(parts, "\n----\n")
}

// TestSecrets_Table: at least 40 fake secret shapes, each in every
// position (own line, after a tab, inside a JSON string, inside a URL,
// multi-line key blocks), through every path (transcript line, hook
// payload by the CLI and by logbook-hook over serve's socket and
// journal, a hook's cwd, command argv, command output on pipes and on a
// PTY, command environment) leave zero occurrences in the stream's
// files on disk, the views' files, the spool, the hook journal once its
// records are in the log, what the server and its workers log, and what
// the CLI shows (its refusals included). What is typed to name things
// for good (exec's --id, --key, --session, --workspace and --cwd; a
// project's, a workspace's and a rename's name; a workspace's id,
// session and base; an archiving session; a task's id, session and
// title) is refused naming the flag, and never reaches the log, git's
// branches and worktrees, or the workspaces' folders.
func TestSecrets_Table(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("commands need bubblewrap")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("workspaces need git")
	}
	shapes := redacttest.Shapes()
	if len(shapes) < 40 {
		t.Fatalf("%d shapes, want at least 40", len(shapes))
	}
	data := t.TempDir()
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound on a hang, not a speed: under -race on a loaded machine it takes over 90 s
	defer cancel()
	logs := &syncBuffer{}
	cli := func(stdin string, args ...string) (string, error) {
		var out syncBuffer
		err := runCLI(ctx, append([]string{"--data", data}, args...), strings.NewReader(stdin), &out, &out)
		logs.Write([]byte(out.String()))
		if err != nil {
			logs.Write([]byte("logbook: " + userMessage(err) + "\n")) // what main prints
		}
		return out.String(), err
	}
	// A repository for projects and workspaces, made in a root of its own.
	wsRoot := t.TempDir()
	t.Setenv("LOGBOOK_WORKSPACES", wsRoot)
	repoDir := filepath.Join(t.TempDir(), "app")
	for _, argv := range [][]string{
		{"init", "--quiet", "--initial-branch=main", repoDir},
		{"-C", repoDir, "commit", "--quiet", "--allow-empty", "-m", "first"},
	} {
		c := exec.Command("git", argv...)
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", argv, err, out)
		}
	}

	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- runCLI(sctx, []string{"--data", data, "serve", "--grace", "300ms"}, strings.NewReader(""), logs, logs)
	}()
	defer func() {
		stop()
		<-served
	}()
	waitServer(t, dataDir(data))

	const sid = "5e551011-0000-4000-8000-000000005ec7"
	// Transcript lines: one user message per shape.
	var tr strings.Builder
	for i, sh := range shapes {
		line, _ := json.Marshal(map[string]any{
			"type": "user", "uuid": fmt.Sprintf("u-%03d", i), "sessionId": sid,
			"timestamp": "2026-04-24T19:19:00.393Z",
			"message":   map[string]any{"role": "user", "content": placed(sh)},
		})
		tr.Write(line)
		tr.WriteByte('\n')
	}
	tpath := filepath.Join(t.TempDir(), sid+".jsonl")
	if err := os.WriteFile(tpath, []byte(tr.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cli("", "import", "claude", tpath); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	// Hook payloads: a prompt and a tool result per shape.
	for i, sh := range shapes {
		p, _ := json.Marshal(map[string]any{"session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt_id": fmt.Sprintf("p-%03d", i), "prompt": placed(sh), "cwd": ws})
		if out, err := cli(string(p), "hook", "claude"); err != nil {
			t.Fatalf("hook: %v\n%s", err, out)
		}
		p, _ = json.Marshal(map[string]any{"session_id": sid, "hook_event_name": "PostToolUse", "tool_use_id": fmt.Sprintf("t-%03d", i), "tool_name": "Bash",
			"tool_input": map[string]any{"command": "cat notes"}, "tool_response": map[string]any{"stdout": placed(sh), "stderr": "", "interrupted": false}})
		if out, err := cli(string(p), "hook", "claude"); err != nil {
			t.Fatalf("hook: %v\n%s", err, out)
		}
	}
	// Hook payloads over serve's socket (logbook-hook): answered once in
	// its journal, hooks.journal, which must not keep them once they are
	// in the log; the cwd holds a secret too.
	bin := hookBin(t)
	for i, sh := range shapes {
		p, _ := json.Marshal(map[string]any{"session_id": sid, "hook_event_name": "UserPromptSubmit", "prompt_id": fmt.Sprintf("j-%03d", i), "prompt": placed(sh), "cwd": ws + "/dir-" + sh.Text})
		if code, stderr := runSockHook(t, bin, data, string(p)); code != 0 {
			t.Fatalf("logbook-hook: exit %d\n%s", code, stderr)
		}
	}
	if n := len(spooled(t, data)); n > 0 {
		t.Errorf("%d payloads spooled: logbook-hook did not deliver over the socket", n)
	}
	// What names things for good: refused, naming the flag, not the
	// value; the project and workspace made first stay as they were.
	if out, err := cli("", "project", "add", repoDir, "--name", "app"); err != nil {
		t.Fatalf("project add: %v\n%s", err, out)
	}
	if out, err := cli("", "workspace", "create", "--project", "app", "--name", "first ws", "--id", "wsok"); err != nil {
		t.Fatalf("workspace create: %v\n%s", err, out)
	}
	for _, sh := range shapes {
		for _, c := range []struct {
			flag string
			args []string
		}{
			{"--id", []string{"exec", "--session", sid, "--workspace", ws, "--id", sh.Text, "--", "true"}},
			{"--key", []string{"exec", "--session", sid, "--workspace", ws, "--key", sh.Text, "--", "true"}},
			{"--session", []string{"exec", "--session", sh.Text, "--workspace", ws, "--", "true"}},
			{"--cwd", []string{"exec", "--session", sid, "--workspace", ws, "--cwd", "dir-" + sh.Text, "--", "true"}},
			{"--workspace", []string{"exec", "--session", sid, "--workspace", ws + "/" + sh.Text, "--", "true"}},
			{"--name", []string{"project", "add", repoDir, "--name", "app " + sh.Text}},
			{"PATH", []string{"project", "add", repoDir + "-" + sh.Text}},
			{"--name", []string{"workspace", "create", "--project", "app", "--name", "fix " + sh.Text}},
			{"--id", []string{"workspace", "create", "--project", "app", "--name", "x", "--id", sh.Text}},
			{"--session", []string{"workspace", "create", "--project", "app", "--name", "x", "--session", sh.Text}},
			{"--base", []string{"workspace", "create", "--project", "app", "--name", "x", "--base", sh.Text}},
			{"NAME", []string{"workspace", "rename", "wsok", "now " + sh.Text}},
			{"--session", []string{"workspace", "rename", "wsok", "y", "--session", sh.Text}},
			{"--session", []string{"workspace", "archive", "wsok", "--session", sh.Text}},
			{"--title", []string{"task", "delegate", "--workspace", "wsok", "--session", sid, "--title", "rotate " + sh.Text}},
			{"--id", []string{"task", "delegate", "--workspace", "wsok", "--session", sid, "--title", "t", "--id", sh.Text}},
			{"--session", []string{"task", "delegate", "--workspace", "wsok", "--session", sh.Text, "--title", "t"}},
		} {
			out, err := cli("", c.args...)
			if err == nil || exitCode(err) != codeUsage || !strings.Contains(err.Error(), " "+c.flag+": holds what looks like a secret (rule ") {
				t.Errorf("%s in %s of %s: exit %d, err %v; want a refusal naming the flag\n%s", sh.Name, c.flag, c.args[0], exitCode(err), err, out)
			}
		}
	}
	// Argv and environment: refused, naming the position, not the value.
	for _, sh := range shapes {
		out, err := cli("", "exec", "--session", sid, "--workspace", ws, "--", "echo", placed(sh))
		if err == nil || !strings.Contains(err.Error(), "argv[1] looks like a secret") {
			t.Errorf("%s in argv: err %v, want a refusal\n%s", sh.Name, err, out)
		}
		out, err = cli("", "exec", "--session", sid, "--workspace", ws, "--env", "NOTE="+placed(sh), "--", "true")
		if err == nil || !strings.Contains(err.Error(), "looks like a secret") {
			t.Errorf("%s in env: err %v, want a refusal\n%s", sh.Name, err, out)
		}
	}
	// Output, on pipes and on a PTY: the secrets come from a file.
	var all strings.Builder
	for _, sh := range shapes {
		all.WriteString(placed(sh) + "\n")
	}
	if err := os.WriteFile(filepath.Join(ws, "notes"), []byte(all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := execPipeAndPTY(t, func(args ...string) (string, error) { return cli("", args...) },
		"out", []string{"--session", sid, "--workspace", ws, "--mode", "read_only"}, "sh", "-c", "cat notes; cat notes >&2")
	for _, r := range runs {
		if !strings.Contains(r.out, "[REDACTED:") {
			t.Errorf("exec %s printed no redaction marker:\n%.2000s", r.id, r.out)
		}
	}

	// What the CLI shows.
	var shown strings.Builder
	for _, args := range [][]string{
		{"--json", "events", "tail", "-n", "100000"}, {"session", "show", sid}, {"audit", sid},
		{"command", "output", "out-pipe"}, {"command", "output", "out-pty"}, {"--json", "commands", "--session", sid},
		{"project", "list"}, {"--json", "workspace", "list"}, {"workspace", "show", "wsok"}, {"--json", "task", "list"},
	} {
		out, err := cli("", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		shown.WriteString(out)
	}
	// A hook keeps its payload's exact bytes in the spool until the
	// server has it: one that found the spool's lock taken, or the server
	// slow, leaves it to the server's next drain (every second). Those
	// bytes are the agent's and unredacted, so the files are read once
	// the spool is empty; an entry that never drains is a failure here.
	sp, err := claude.Open(dataDir(data).path("spool"))
	if err != nil {
		t.Fatal(err)
	}
	for began := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		pending, err := sp.Pending()
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) == 0 {
			t.Logf("spool empty %s after the last command", time.Since(began).Round(time.Millisecond))
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d hook payloads still in the spool when the test's time ran out (first %s); server log:\n%s", len(pending), pending[0].ID, logs.String())
		}
	}
	stop()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("serve: %v", err)
	}
	served <- nil // for the deferred wait

	// Every file of the data dir: the stream's message blocks, the views'
	// WAL and tables, the spool and its rejected entries.
	files := map[string][]byte{}
	err = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			files[p] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files["(server and CLI logs)"] = []byte(logs.String())
	files["(what the CLI shows)"] = []byte(shown.String())
	// Git's branches and worktrees, and every file name the workspaces
	// and the repository's git dir hold.
	var gitMeta strings.Builder
	for _, argv := range [][]string{{"for-each-ref", "--format=%(refname)"}, {"worktree", "list", "--porcelain"}} {
		out, err := exec.Command("git", append([]string{"-C", repoDir}, argv...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", argv, err, out)
		}
		gitMeta.Write(out)
	}
	if !strings.Contains(gitMeta.String(), "worktree/first-ws") {
		t.Fatalf("no workspace branch in git's refs:\n%s", gitMeta.String())
	}
	for _, root := range []string{wsRoot, filepath.Join(repoDir, ".git")} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			gitMeta.WriteString(p + "\n")
			return nil
		})
	}
	files["(git branches, worktrees and folder names)"] = []byte(gitMeta.String())
	var stream int
	for p, b := range files {
		if strings.Contains(p, "jetstream") && bytes.Contains(b, []byte("[REDACTED:")) {
			stream++
		}
	}
	if stream == 0 {
		t.Fatal("no redaction marker in the stream's files: nothing was stored?")
	}
	for _, sh := range shapes {
		for p, b := range files {
			if bytes.Contains(b, []byte(sh.Secret)) {
				i := bytes.Index(b, []byte(sh.Secret))
				t.Errorf("%s: secret found in %s: %q", sh.Name, p, b[max(0, i-300):i])
			}
		}
	}
}
