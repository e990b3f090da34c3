package natscluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/notify"
)

// TestNotify_TwoHosts: two writing hosts on a three-node cluster each
// run the notifier from their own notify.toml, on the one shared durable
// consumer: every review a session asks for is told to the webhook once,
// whichever host took the hook, and recorded once.
func TestNotify_TwoHosts(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	var mu sync.Mutex
	got := map[string]int{}
	hosts := map[string]int{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p notify.Payload
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil || p.Key != req.Header.Get("Idempotency-Key") {
			http.Error(w, "bad notification", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got[p.Key]++
		hosts[p.Host]++
		mu.Unlock()
	}))
	defer rcv.Close()
	conf := fmt.Sprintf("[sinks.hook]\ntype = \"webhook\"\nurl = %q\n\n[[rule]]\non = \"review_pending\"\nafter = 0\nsinks = [\"hook\"]\n", rcv.URL)
	a := e.newHost("writer-a", "writer", "serve")
	b := e.newHost("writer-b", "writer", "serve")
	for _, h := range []*host{a, b} {
		if err := os.MkdirAll(h.data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.data, notify.File), []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		h.start()
	}
	// serve writes serve.json (start's sign that it is up) before its
	// notifier has read notify.toml and said so: wait for the line.
	for _, h := range []*host{a, b} {
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(h.output(), "notifications: rules review_pending → hook"); {
			if time.Now().After(deadline) {
				t.Fatalf("%s does not say its notifications after 30s:\n%s", h.name, h.output())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	const sessions = 6
	ws := t.TempDir()
	for i := range sessions {
		h := []*host{a, b}[i%2]
		sid := fmt.Sprintf("5e551011-0000-4000-8000-0000000000%02d", i)
		for _, ev := range []map[string]any{
			{"hook_event_name": "SessionStart", "source": "startup"},
			{"hook_event_name": "UserPromptSubmit", "prompt": "Push it.", "prompt_id": "p1"},
			{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": map[string]any{"command": "git push"}},
			{"hook_event_name": "Notification", "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"},
		} {
			ev["session_id"], ev["cwd"] = sid, ws
			p, _ := json.Marshal(ev)
			if _, stderr, err := h.cliIn(p, "hook", "claude"); err != nil {
				t.Fatalf("hook on %s: %v\n%s", h.name, err, stderr)
			}
		}
	}
	recorded := func(sid string) int {
		out, _, err := a.cli("audit", "--json", sid)
		if err != nil {
			return 0
		}
		return strings.Count(out, `"type": "notification.sent"`) + strings.Count(out, `"type":"notification.sent"`)
	}
	for i := range sessions {
		sid := fmt.Sprintf("5e551011-0000-4000-8000-0000000000%02d", i)
		for recorded(sid) < 1 {
			select {
			case <-t.Context().Done():
				t.Fatalf("no notification recorded for %s:\n%s\n%s", sid, tail(a.output(), 3000), tail(b.output(), 3000))
			case <-time.After(200 * time.Millisecond):
			}
		}
		if n := recorded(sid); n != 1 {
			t.Errorf("session %s: %d notification.sent, want 1", sid, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range got {
		total += n
	}
	t.Logf("deliveries by host: %v", hosts)
	if len(got) != sessions || total != sessions {
		t.Errorf("deliveries %v: want %d keys once each", got, sessions)
	}
}
