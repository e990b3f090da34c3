package gate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// reviewerReq is a request for a low-risk action with nothing known of
// the session: no user message, no mode.
func reviewerReq() ReviewerRequest {
	return ReviewerRequest{Version: 1, ReviewID: "toolu_1", Session: "s1", Event: "PreToolUse", Tool: "Bash", Action: "ls", Risk: "low"}
}

const allowLow = `{"verdict":"allow","risk":"low","user_authorization":"none","evidence":[],"reason":"harmless"}`

func TestReviewer_AnswerPastTheBoundIsUnavailable(t *testing.T) {
	for name, body := range map[string]string{
		"endless":         "cat >/dev/null; exec yes",
		"three MiB, exit": "cat >/dev/null; yes | head -c 3145728; exit 0",
		"bound plus one":  fmt.Sprintf("cat >/dev/null; head -c %d /dev/zero | tr '\\0' ' '; echo '%s'", MaxAnswerBytes, allowLow),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			budget := 20 * time.Second
			r := &Reviewer{Command: script(t, body)}
			start := time.Now()
			a := r.Review(context.Background(), reviewerReq(), budget)
			if d := time.Since(start); d >= budget {
				t.Errorf("the review took %s, past its budget %s", d, budget)
			}
			if a.Outcome != "unavailable" || !strings.Contains(a.Reason, "more than 1048576 bytes (1 MiB)") {
				t.Errorf("got outcome %q reason %q, want unavailable naming the 1 MiB bound", a.Outcome, a.Reason)
			}
		})
	}
	t.Run("just under the bound", func(t *testing.T) {
		t.Parallel()
		pad := MaxAnswerBytes - len(allowLow) - 1
		r := &Reviewer{Command: script(t, fmt.Sprintf("cat >/dev/null; head -c %d /dev/zero | tr '\\0' ' '; echo '%s'", pad, allowLow))}
		if a := r.Review(context.Background(), reviewerReq(), 20*time.Second); a.Outcome != "" || a.Verdict != "allow" {
			t.Errorf("got outcome %q verdict %q reason %q, want allow", a.Outcome, a.Verdict, a.Reason)
		}
	})
}

// gone reports whether pid has exited (or is a zombie left to its parent).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func TestReviewer_DetachedGrandchildNeitherBlocksTheAnswerNorSurvives(t *testing.T) {
	for name, detach := range map[string]string{
		"setsid":        "setsid sh -c 'echo $$ > %[1]s; exec sleep 120' &",
		"process group": "sh -c 'echo $$ > %[1]s; exec sleep 120' &",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "pid")
			body := fmt.Sprintf("cat >/dev/null\n"+detach+"\nwhile [ ! -s %[1]s ]; do sleep 0.01; done\necho '%[2]s'", pidfile, allowLow)
			r := &Reviewer{Command: script(t, body)}
			a := r.Review(context.Background(), reviewerReq(), 20*time.Second)
			if a.Outcome != "" || a.Verdict != "allow" {
				t.Errorf("got outcome %q verdict %q reason %q, want the reviewer's allow", a.Outcome, a.Verdict, a.Reason)
			}
			b, err := os.ReadFile(pidfile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			// SIGKILL was sent before Review returned; its delivery is
			// the kernel's, so the exit is waited for, not assumed.
			for deadline := time.Now().Add(10 * time.Second); !gone(pid); {
				if time.Now().After(deadline) {
					t.Fatalf("the reviewer's grandchild %d still runs after the review", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestReviewer_UnknownsAreEmptyListsOrOmitted(t *testing.T) {
	got := filepath.Join(t.TempDir(), "request.json")
	r := &Reviewer{Command: script(t, fmt.Sprintf("cat > %s; echo '%s'", got, allowLow))}
	if a := r.Review(context.Background(), reviewerReq(), 20*time.Second); a.Verdict != "allow" {
		t.Fatalf("got %+v", a)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"user_messages":[]`) || strings.Contains(s, "null") || strings.Contains(s, `"mode"`) {
		t.Errorf("request %s: want user_messages [] and no mode when none is known", s)
	}
}
