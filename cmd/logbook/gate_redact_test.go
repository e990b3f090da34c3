package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// gateRig is a real `logbook serve` (in this process, as main runs it)
// on a data dir in t.TempDir(), a workspace, and a started session.
type gateRig struct {
	t      *testing.T
	data   string
	ws     string
	sid    string
	stderr *syncBuffer // what serve logs
}

// newGateRig starts serve with args on a new data dir holding files
// (name → text) and starts session sid in a new workspace.
func newGateRig(t *testing.T, sid string, files map[string]string, args ...string) *gateRig {
	t.Helper()
	r := &gateRig{t: t, data: filepath.Join(t.TempDir(), "data"), ws: t.TempDir(), sid: sid, stderr: &syncBuffer{}}
	if err := os.MkdirAll(r.data, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(r.data, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runCLI(ctx, append([]string{"--data", r.data, "serve", "--workers", "0", "--reconcile-every", "0", "--fsync", "interval"}, args...), bytes.NewReader(nil), r.stderr, r.stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, r.stderr.String())
		}
	})
	waitServer(t, dataDir(r.data))
	r.hook(false, map[string]any{"hook_event_name": "SessionStart", "source": "startup"})
	return r
}

// hook runs `logbook hook claude` (with --gate --budget 3s when gated)
// on the payload fields (session_id and cwd added) and returns its
// stdout and stderr.
func (r *gateRig) hook(gated bool, fields map[string]any) (string, string) {
	r.t.Helper()
	p := map[string]any{"session_id": r.sid, "cwd": r.ws}
	for k, v := range fields {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	args := []string{"--data", r.data, "hook", "claude"}
	if gated {
		args = append(args, "--gate", "--budget", "3s")
	}
	var out, errb syncBuffer
	if err := runCLI(context.Background(), args, bytes.NewReader(b), &out, &errb); err != nil {
		r.t.Fatalf("hook %s: %v\n%s", b, err, errb.String())
	}
	return out.String(), errb.String()
}

// prompt records a user prompt (which closes a tripped breaker).
func (r *gateRig) prompt(text string) {
	r.t.Helper()
	r.hook(false, map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": text})
}

// bash asks the gate about a Bash call (PreToolUse) and returns the
// answer.
func (r *gateRig) bash(id, command string) string {
	r.t.Helper()
	out, _ := r.hook(true, map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": id, "tool_input": map[string]any{"command": command}})
	return out
}

// onDisk returns the files under the data dir that hold s, raw.
func (r *gateRig) onDisk(s string) []string {
	r.t.Helper()
	var found []string
	filepath.WalkDir(r.data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// TestGate_RecordsRedacted: every field the gate appends that can carry
// the agent's input, a reviewer's words or a policy file's text is
// redacted by the data dir's rules (redact.txt over the built-in ones)
// before it is appended: the action of a denied and of a reviewed call,
// a tool's name, a reviewer's reason, its stderr and the
// beginning of an answer that is not JSON, a project policy's pattern
// named as the rule that decided and quoted as a fault. A session,
// agent or tool_use id holding a secret is refused, never rewritten,
// and the hook's messages name the rule, not the id. None of the
// secrets is on disk in the data dir (the stream's files, the views), in
// `audit`, `events tail --json`, `review list` or what serve logs; the
// answers the agent gets do not quote them either.
func TestGate_RecordsRedacted(t *testing.T) {
	t.Parallel()
	aws := "AK" + "IA" + "Q1W2E3R4T5Y6U7I8"
	gh := "gh" + "p_" + "4Nd8fKq2ZbX9vLm3Qw7Rt1Yp6Hs0Jc5Ue2Ia"
	pass := "Zx9Secr3t" + "Passw0rdQ"
	custom := "acme-" + "7731924"
	reviewer := filepath.Join(t.TempDir(), "reviewer.sh")
	// It quotes the command it reviews in its reason, on stderr when it
	// fails, and as its whole answer when asked for garbage.
	script := `#!/bin/sh
in=$(cat)
cmd=$(printf '%s' "$in" | sed -n 's/.*"input":{"command":"\([^"]*\)".*/\1/p')
case "$cmd" in
*fail*) echo "cannot judge $cmd" >&2; exit 3 ;;
*garbage*) printf '%s\n' "$cmd"; exit 0 ;;
*wait*) sleep 2 ;;
esac
printf '{"verdict":"deny","risk":"low","reason":"I refuse %s"}\n' "$cmd"
`
	if err := sandboxtest.WriteExecutable(reviewer, []byte(script)); err != nil {
		t.Fatal(err)
	}
	r := newGateRig(t, "5e551011-0000-4000-8000-00000000ga7e", map[string]string{
		"redact.txt":  "acme-[0-9]{7}\n",
		"policy.toml": "deny = [\"Bash(sudo:*)\"]\nreview = [\"Bash(git push:*)\", \"mcp__*\"]\n",
	}, "--reviewer", reviewer)

	// Each call is denied; a prompt between them keeps the breaker
	// from deciding instead of the rule or the reviewer.
	var answers []string
	for _, c := range [][2]string{
		{"a1", "sudo " + aws},
		{"a2", "git push https://u:" + pass + "@github.com/x/y"},
		{"a3", "git push fail " + custom},
		// The secret straddles the 80 bytes of the answer quoted.
		{"a4", "git push garbage " + strings.Repeat("x", 50) + " " + aws + " " + custom},
	} {
		answers = append(answers, r.bash(c[0], c[1]))
		r.prompt("go on")
	}
	// A review still open: review list shows its action.
	waited := make(chan string, 1)
	go func() {
		out, _ := r.hook(true, map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "a8", "tool_input": map[string]any{"command": "git push wait " + aws}})
		waited <- out
	}()
	var list string
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(list, "a8"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("review list does not show a8:\n%s", list)
		}
		list = cli(t, r.data, "review", "list")
	}
	answers = append(answers, <-waited)
	r.prompt("go on")
	// Ids are never redacted: one holding a secret is refused, naming
	// the rule, never the id; the hook's messages do not quote it.
	var hookErrs []string
	for _, f := range []map[string]any{
		{"session_id": gh},
		{"session_id": "s-" + custom},
		{"agent_id": gh},
		{"tool_use_id": "toolu_" + custom},
	} {
		fields := map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "a9", "tool_input": map[string]any{"command": "sudo x"}}
		for k, v := range f {
			fields[k] = v
		}
		out, errOut := r.hook(true, fields)
		if !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "looks like a secret") {
			t.Errorf("%v: %s, want a deny naming an id that looks like a secret", f, out)
		}
		answers = append(answers, out)
		hookErrs = append(hookErrs, errOut)
	}
	out, _ := r.hook(true, map[string]any{"hook_event_name": "PreToolUse", "tool_name": "mcp__" + custom, "tool_use_id": "a5", "tool_input": map[string]any{"q": aws}})
	answers = append(answers, out)
	r.prompt("go on")
	// A project policy naming a secret in a deny rule, then one whose
	// pattern does not parse.
	if err := os.MkdirAll(filepath.Join(r.ws, ".logbook"), 0o700); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(r.ws, ".logbook", "policy.toml")
	if err := os.WriteFile(proj, []byte("deny = [\"Bash(echo "+custom+":*)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	answers = append(answers, r.bash("a6", "echo "+custom+" x"))
	r.prompt("go on")
	ws2 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws2, ".logbook"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws2, ".logbook", "policy.toml"), []byte("allow = [\"Bash(ls) "+gh+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ = r.hook(true, map[string]any{"hook_event_name": "PreToolUse", "cwd": ws2, "tool_name": "Bash", "tool_use_id": "a7", "tool_input": map[string]any{"command": "ls"}})
	answers = append(answers, out)
	for i, a := range answers {
		if !strings.Contains(a, `"permissionDecision":"deny"`) {
			t.Errorf("answer %d: %s, want a deny", i, a)
		}
	}

	outs := map[string]string{
		"audit":       cli(t, r.data, "audit", r.sid),
		"events tail": cli(t, r.data, "events", "tail", "--json", "-n", "1000"),
		"review list": list,
		"answers":     strings.Join(answers, "\n"),
	}
	tail := outs["events tail"]
	for _, want := range []string{"review.requested", "[REDACTED:custom-1]", "I refuse", "cannot judge", "answer is not JSON", "Bash(echo [REDACTED:custom-1]:*)", "mcp__[REDACTED:custom-1]", "pattern"} {
		if !strings.Contains(tail, want) {
			t.Errorf("events tail --json holds no %q:\n%s", want, tail)
		}
	}
	outs["serve log"] = r.stderr.String()
	outs["hook stderr"] = strings.Join(hookErrs, "\n")
	for _, s := range []string{aws, gh, pass, custom} {
		for name, out := range outs {
			if i := strings.Index(out, s); i >= 0 {
				t.Errorf("%s shows the secret %.12s…: %q", name, s, out[max(0, i-200):min(len(out), i+100)])
			}
		}
		if files := r.onDisk(s); len(files) > 0 {
			t.Errorf("the secret %.12s… is on disk in %v", s, files)
		}
	}
}
