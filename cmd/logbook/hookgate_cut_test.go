package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
)

// gateAnswer returns the decision and reason of a gated hook's answer
// (PreToolUse or PermissionRequest), "" for no answer.
func gateAnswer(t *testing.T, out string) (decision, reason string) {
	t.Helper()
	if out == "" {
		return "", ""
	}
	ans := readHookAnswer(t, out)
	if ans.HSO.Decision != "" {
		return ans.HSO.Decision, ans.HSO.Reason
	}
	return ans.HSO.Perm.Behavior, ans.HSO.Perm.Message
}

// TestHookGate_CutPayloadJudgedWhole: a gated call whose payload is
// padded over the send cap (256 KiB, a long description beside the
// command) is recorded cut but judged on its whole tool input, through
// `logbook hook claude --gate` and through `logbook-hook claude --gate`
// (which hands it to logbook), real processes against a real server,
// for PreToolUse and PermissionRequest: `ls aaaa…; rm -rf /x`, whose cut
// copy reads `ls aaaa…`, is denied by the deny rule; `ls aaaa…` alone
// is still allowed; audit's review names the digest of the whole input
// judged. A tool input over gate.MaxJudgedInput is denied by the hook
// without asking, naming its size and the cap, and recorded (drained
// from the spool) as the hook's deny with the whole input's digest.
func TestHookGate_CutPayloadJudgedWhole(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	data := t.TempDir()
	policy := "allow = [\"Bash(ls:*)\", \"Bash(echo:*)\"]\ndeny = [\"Bash(rm -rf:*)\", \"Bash(curl:*)\"]\n"
	if err := os.WriteFile(filepath.Join(data, gate.PolicyFile), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	serveInProcess(t, data, "--workers", "0", "--reconcile-every", "0")
	dir := installHookAs(t, "logbook-hook", "logbook")
	bins := []struct {
		name string
		args []string
	}{
		{"logbook", []string{"hook", "claude", "--gate"}},
		{"logbook-hook", []string{"claude", "--gate"}},
	}
	a5000 := "ls " + strings.Repeat("a", 5000)
	n := 0
	for _, bin := range bins {
		for _, event := range []string{gate.EventPreToolUse, gate.EventPermissionRequest} {
			// A session per binary and event: the denies add up to no
			// breaker.
			n++
			sess := fmt.Sprintf("9a7e0000-0000-4000-8000-0000000c%04d", n)
			payload := func(useID, command string, pad int) (string, string) {
				in, _ := json.Marshal(map[string]string{"command": command, "description": strings.Repeat("d", pad)})
				b, _ := json.Marshal(map[string]any{"session_id": sess, "transcript_path": "/nonexistent/c.jsonl", "cwd": "/tmp", "permission_mode": "default",
					"hook_event_name": event, "tool_name": "Bash", "tool_use_id": useID, "tool_input": json.RawMessage(in)})
				sum := sha256.Sum256(in)
				return string(b), "sha256:" + hex.EncodeToString(sum[:])
			}
			run := func(p string) (string, string) {
				t.Helper()
				out, errOut, code := runHook(t, data, filepath.Join(dir, bin.name), p, bin.args...)
				if code != 0 {
					t.Fatalf("%s %s: exit %d, stderr %s", bin.name, event, code, errOut)
				}
				return gateAnswer(t, out)
			}
			where := bin.name + " " + event

			chained, chainedSum := payload("toolu_chained", a5000+"; rm -rf /x", 300<<10)
			if len(chained) <= claude.MaxHookSend {
				t.Fatalf("payload of %d bytes: not over the send cap", len(chained))
			}
			if d, why := run(chained); d != gate.DecideDeny || !strings.Contains(why, "Bash(rm -rf:*)") {
				t.Errorf("%s, %s…; rm -rf /x: %s %q, want deny by Bash(rm -rf:*)", where, a5000[:8], d, why)
			}
			harmless, _ := payload("toolu_harmless", a5000, 300<<10)
			if d, why := run(harmless); d != gate.DecideAllow {
				t.Errorf("%s, %s…: %s %q, want allow", where, a5000[:8], d, why)
			}
			over, overSum := payload("toolu_over", "ls", 600<<10)
			var in struct {
				In json.RawMessage `json:"tool_input"`
			}
			json.Unmarshal([]byte(over), &in)
			tooLarge := fmt.Sprintf("too large to judge (%d bytes, cap %d)", len(in.In), gate.MaxJudgedInput)
			if d, why := run(over); d != gate.DecideDeny || !strings.Contains(why, tooLarge) {
				t.Errorf("%s, over the cap: %s %q, want deny %q", where, d, why, tooLarge)
			}

			// The chained call's review names the whole input judged; the
			// deny over the cap is recorded as the hook gave it once the
			// server drains it from the spool.
			want := []string{
				`entry=toolu_chained .*args=` + chainedSum,
				`review.decided .*entry=toolu_chained .*verdict=deny`,
				`review.decided .*entry=toolu_harmless .*verdict=allow`,
				`entry=toolu_over .*args=` + overSum,
				`review.decided .*entry=toolu_over .*verdict=deny .*decided_by="hook:local policy: fail closed"`,
			}
			// The hook's own observation of the over-cap call lands
			// before the deny drained from the spool: wait for all of
			// it, not the first line that names the entry.
			all := func(audit string) bool {
				for _, w := range want {
					if !regexp.MustCompile(`(?m)` + w).MatchString(audit) {
						return false
					}
				}
				return strings.Contains(audit, tooLarge)
			}
			var audit string
			for deadline := time.Now().Add(20 * time.Second); ; {
				audit = cli(t, data, "audit", sess)
				if all(audit) || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			for _, w := range want {
				if !regexp.MustCompile(`(?m)` + w).MatchString(audit) {
					t.Errorf("%s: audit lacks %q:\n%s", where, w, audit)
				}
			}
			if !strings.Contains(audit, tooLarge) {
				t.Errorf("%s: audit lacks the reason %q:\n%s", where, tooLarge, audit)
			}
		}
	}
}
