package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/cmd/internal/hookfast"
)

// TestFailClosedAnswer_SameAsGate: logbook-hook's own deny (it does not
// link the gate) is byte for byte the gate's, for both events.
func TestFailClosedAnswer_SameAsGate(t *testing.T) {
	const why = `the "logbook" program was not found`
	for _, ev := range []string{gate.EventPreToolUse, gate.EventPermissionRequest} {
		got, want := hookfast.FailClosedAnswer(ev, why), gate.ClaudeAnswer(ev, gate.FailClosed(why))
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", ev, got, want)
		}
	}
}

// installHookAs puts this test binary (which runs as logbook-hook, or as
// logbook, by the name it is started under) into a new folder as each of
// names, and returns the folder.
func installHookAs(t *testing.T, names ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Link(self, filepath.Join(dir, n)); err != nil {
			if err := copyExecutable(self, filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// runHook runs program bin (a real process) with args and payload on
// stdin, with $PATH naming only an empty folder, and returns its stdout,
// stderr and exit code.
func runHook(t *testing.T, data, bin string, payload string, args ...string) (string, string, int) {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir(), "LOGBOOK_DATA=" + data}
	out, errOut, code, err := runCmd(c, payload)
	if err != nil {
		t.Fatal(err)
	}
	return out, errOut, code
}

const gatedPayload = `{"session_id":"g","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"rm -rf /"}}`

// hookAnswer is a gated hook's answer to Claude Code: PreToolUse's
// decision and reason, or PermissionRequest's behavior and message.
type hookAnswer struct {
	HSO struct {
		Event    string `json:"hookEventName"`
		Decision string `json:"permissionDecision"`
		Reason   string `json:"permissionDecisionReason"`
		Perm     struct {
			Behavior string `json:"behavior"`
			Message  string `json:"message"`
		} `json:"decision"`
	} `json:"hookSpecificOutput"`
}

// readHookAnswer decodes a gated hook's answer, failing the test when out
// is not one.
func readHookAnswer(t *testing.T, out string) hookAnswer {
	t.Helper()
	var ans hookAnswer
	if err := json.Unmarshal([]byte(out), &ans); err != nil {
		t.Fatalf("answer %q: %v", out, err)
	}
	return ans
}

// denyReason returns the reason of a gated hook's deny answer, failing
// the test when out is not one.
func denyReason(t *testing.T, out string) string {
	t.Helper()
	ans := readHookAnswer(t, out)
	switch {
	case ans.HSO.Event == gate.EventPreToolUse && ans.HSO.Decision == "deny":
		return ans.HSO.Reason
	case ans.HSO.Event == gate.EventPermissionRequest && ans.HSO.Perm.Behavior == "deny":
		return ans.HSO.Perm.Message
	}
	t.Fatalf("answer %s: not a deny", out)
	return ""
}

// TestLogbookHook_NoLogbook: logbook-hook with no logbook beside it nor
// on $PATH fails closed for a gated call (deny, exit 0, a reason without
// the Go exec package's words), and without --gate keeps a payload it
// cannot use in the spool, for serve to set aside, redacted, in the
// spool's rejected/ folder.
func TestLogbookHook_NoLogbook(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(installHookAs(t, "logbook-hook"), "logbook-hook")
	data := t.TempDir()

	out, errOut, code := runHook(t, data, bin, gatedPayload, "claude", "--gate")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	why := denyReason(t, out)
	if !strings.Contains(why, "could not find the logbook program") || strings.Contains(why, "exec:") || strings.Contains(why, "$PATH\"") {
		t.Errorf("reason %q", why)
	}
	perm := strings.Replace(gatedPayload, "PreToolUse", "PermissionRequest", 1)
	out, _, code = runHook(t, data, bin, perm, "--data", data, "claude", "--gate")
	if code != 0 || !strings.Contains(out, `"hookEventName":"PermissionRequest"`) {
		t.Fatalf("exit %d, answer %s", code, out)
	}
	denyReason(t, out)
	// Both calls are kept in the spool with the verdict the hook gave, for
	// serve to record (gatelocal.txtar shows serve recording such a pair).
	for _, ext := range []string{".json", ".verdict"} {
		kept, _ := filepath.Glob(filepath.Join(data, "spool", "*"+ext))
		if len(kept) != 2 {
			t.Fatalf("spool holds %v, want the two gated calls' %s files", kept, ext)
		}
		for _, k := range kept {
			b, _ := os.ReadFile(k)
			if ext == ".verdict" && !strings.Contains(string(b), `"decided_by":{"kind":"hook","name":"local policy: fail closed"}`) {
				t.Errorf("%s: %s", k, b)
			}
			os.Remove(k)
		}
	}

	// A gated hook on an event the gate does not answer gives no deny:
	// it records the event itself, as logbook-hook claude does.
	out, errOut, code = runHook(t, data, bin, `{"session_id":"g","hook_event_name":"Stop"}`, "claude", "--gate")
	if code != 0 || out != "" {
		t.Fatalf("Stop with --gate and no logbook: exit %d, stdout %q, stderr %s: want it recorded, no answer", code, out, errOut)
	}
	spooled, _ := filepath.Glob(filepath.Join(data, "spool", "*.json"))
	if len(spooled) != 1 {
		t.Fatalf("spool holds %v, want the Stop", spooled)
	}
	os.Remove(spooled[0])

	// Not gated: a payload it cannot use is refused, exit 1, and kept in
	// the spool as it came; the refusal printed quotes none of it. serve,
	// draining the spool, refuses it too and sets it aside, redacted.
	out, errOut, code = runHook(t, data, bin, `{"hook_event_name":"Stop","note":"token ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`, "claude")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "refused; kept in the spool as") || !strings.Contains(errOut, "`logbook serve` to set aside, redacted") ||
		strings.Contains(errOut, "exec:") || strings.Contains(errOut, "ghp_") {
		t.Errorf("stderr %s", errOut)
	}
	if spooled, _ := filepath.Glob(filepath.Join(data, "spool", "*.json")); len(spooled) != 1 {
		t.Fatalf("spool holds %v, want the refused payload", spooled)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if n := drainData(t, ctx, data); n != 0 {
		t.Errorf("drain delivered %d, want the refused payload set aside", n)
	}
	kept, _ := filepath.Glob(filepath.Join(data, "spool", claude.RejectedDir, "*.json"))
	whys, _ := filepath.Glob(filepath.Join(data, "spool", claude.RejectedDir, "*.why"))
	if len(kept) != 1 || len(whys) != 1 {
		t.Fatalf("rejected/ holds %v %v, want one payload and its reason", kept, whys)
	}
	b, _ := os.ReadFile(kept[0])
	if strings.Contains(string(b), "ghp_aaaa") || !strings.Contains(string(b), "Stop") {
		t.Errorf("kept payload %s: want it redacted", b)
	}
	if left, _ := filepath.Glob(filepath.Join(data, "spool", "*.json")); len(left) != 0 {
		t.Errorf("spool holds %v: a refused payload must block nothing once drained", left)
	}
}

// TestLogbookHook_LogbookBeside: logbook-hook finds logbook in its own
// folder with nothing on $PATH, and a gated call whose flags are wrong is
// answered deny by it.
func TestLogbookHook_LogbookBeside(t *testing.T) {
	dir := installHookAs(t, "logbook-hook", "logbook")
	out, errOut, code := runHook(t, t.TempDir(), filepath.Join(dir, "logbook-hook"), gatedPayload, "claude", "--gate", "--budget", "abc")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if why := denyReason(t, out); !strings.Contains(why, `invalid argument "abc" for "--budget" flag`) {
		t.Errorf("reason %q", why)
	}
}
