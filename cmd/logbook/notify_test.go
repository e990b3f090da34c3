package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/notify"
	"github.com/logbook-dev/logbook/adapters/notify/notifytest"
	"github.com/logbook-dev/logbook/replay"
)

// heldReceiver is a webhook receiver counting deliveries by idempotency
// key. The first delivery is held until release is closed, and first
// is closed when it arrives: a test stops the sender while its
// notification is in flight.
type heldReceiver struct {
	mu      sync.Mutex
	got     map[string]int
	rules   map[string]string // key → rule
	first   chan struct{}
	release chan struct{}
	held    bool
	srv     *httptest.Server
}

func newHeldReceiver(t *testing.T) *heldReceiver {
	r := &heldReceiver{got: map[string]int{}, rules: map[string]string{}, first: make(chan struct{}), release: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p notify.Payload
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil || p.Key != req.Header.Get("Idempotency-Key") {
			http.Error(w, "bad notification", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got[p.Key]++
		r.rules[p.Key] = p.Rule
		hold := !r.held
		r.held = true
		r.mu.Unlock()
		if hold {
			close(r.first)
			<-r.release
		}
	}))
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
		r.srv.Close()
	})
	return r
}

// counts returns the deliveries by key and by rule.
func (r *heldReceiver) counts() (byKey map[string]int, byRule map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	byKey, byRule = map[string]int{}, map[string]int{}
	for k, n := range r.got {
		byKey[k] = n
		byRule[r.rules[k]] += n
	}
	return byKey, byRule
}

// TestNotify_OnceAcrossServeKill: a session waiting for a person (a
// permission dialog) makes a review_pending and, a second later, a
// waiting notification. serve is SIGKILLed while the first is in flight
// at the receiver; the next serve sends it again with the same key, and
// the other once: one key per rule firing, only the one in flight sent
// twice, and `audit` shows one notification.sent per rule and sink.
// Where dbus-daemon is installed each rule also tells a desktop, through
// a real session bus, exactly once.
func TestNotify_OnceAcrossServeKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	p := followProcs{t: t, bin: soakBuild(t), data: filepath.Join(t.TempDir(), "data")}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	rcv := newHeldReceiver(t)
	if err := os.MkdirAll(p.data, 0o700); err != nil {
		t.Fatal(err)
	}
	// The desktop too, on a real session bus, where dbus-daemon is
	// installed (.ci/run installs it): told beside the webhook, and
	// recorded before serve is killed.
	var desk *notifytest.Desktop
	sinks, deskSink := `["hook"]`, ""
	if notifytest.HaveBus() {
		addr := notifytest.SessionBus(t)
		desk = notifytest.ServeDesktop(t, addr)
		sinks, deskSink = `["hook", "desk"]`, fmt.Sprintf("[sinks.desk]\ntype = \"desktop\"\naddress = %q\n", addr)
	}
	conf := fmt.Sprintf(`[sinks.hook]
type = "webhook"
url = %q

%s
[[rule]]
on = "review_pending"
after = 0
sinks = %s

[[rule]]
on = "waiting"
after = 1
sinks = %s
`, rcv.srv.URL, deskSink, sinks, sinks)
	if err := os.WriteFile(filepath.Join(p.data, notify.File), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var log1 syncBuffer
	s1 := p.serve(ctx, &log1)
	// Said before serve.json names the server, so before the "data" line
	// that follows it; the lines reach log1 through a pipe, a moment
	// after serve wrote them.
	waitFor(t, time.Minute, "data line of serve's", func() bool { return strings.Contains(log1.String(), `msg="data `) })
	said := strings.Index(log1.String(), "notifications: rules review_pending → hook")
	if said < 0 || said > strings.Index(log1.String(), `msg="data `) || !strings.Contains(log1.String(), "waiting after 1s → hook") {
		t.Errorf("serve does not say which rules and sinks are on before serve.json names it:\n%s", log1.String())
	}
	const sid = "5e551011-0000-4000-8000-0000000000a1"
	for _, h := range []map[string]any{
		{"hook_event_name": "SessionStart", "source": "startup", "cwd": "/tmp"},
		{"hook_event_name": "UserPromptSubmit", "prompt": "Push it.", "prompt_id": "p1", "cwd": "/tmp"},
		{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": map[string]any{"command": "git push"}, "cwd": "/tmp"},
		{"hook_event_name": "Notification", "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash", "cwd": "/tmp"},
	} {
		h["session_id"] = sid
		b, _ := json.Marshal(h)
		if out, err := p.run(ctx, string(b), "hook", "claude"); err != nil {
			t.Fatalf("hook: %v\n%s", err, out)
		}
	}
	select {
	case <-rcv.first:
	case <-ctx.Done():
		t.Fatalf("no notification reached the receiver:\n%s", log1.String())
	}
	// The desktop is told beside the held webhook, not after it: its
	// notification.sent is in the log before serve is killed.
	for desk != nil && !auditHas(ctx, p, sid, "sink=desk(desktop)") {
		select {
		case <-ctx.Done():
			t.Fatalf("the desktop is not told while the webhook is held:\n%s", log1.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := syscall.Kill(-s1.c.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s1.exited
	close(rcv.release)

	var log2 syncBuffer
	p.serve(ctx, &log2)
	var items []replay.Item
	for {
		out, err := p.stdout(ctx, "", "audit", "--json", sid)
		items = items[:0]
		if err == nil {
			if err := json.Unmarshal([]byte(out), &items); err != nil {
				t.Fatalf("audit --json: %v\n%s", err, out)
			}
		}
		sent := 0
		for _, it := range items {
			if it.Type == "notification.sent" {
				sent++
			}
		}
		byKey, _ := rcv.counts()
		want := 2
		if desk != nil {
			want = 4
		}
		if sent >= want && len(byKey) >= 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not both notifications recorded: audit %+v\nreceived %v\nfirst serve:\n%s\nsecond serve:\n%s", items, byKey, log1.String(), log2.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	// Once recorded, nothing more is sent: the second serve's consumer
	// drains before its log says so.
	byKey, byRule := rcv.counts()
	total, twice := 0, 0
	for _, n := range byKey {
		total += n
		if n > 1 {
			twice++
		}
	}
	t.Logf("deliveries by key %v, by rule %v", byKey, byRule)
	if len(byKey) != 2 || byRule["review_pending"] == 0 || byRule["waiting"] == 0 || twice > 1 || total > 3 {
		t.Errorf("deliveries by key %v by rule %v: want one key per rule, only the one in flight sent again", byKey, byRule)
	}
	rules := map[string]int{}
	for _, it := range items {
		if it.Type == "notification.sent" {
			for _, kv := range strings.Fields(it.Detail) {
				if r, ok := strings.CutPrefix(kv, "rule="); ok {
					rules[r]++
				}
			}
			if it.Cause == nil || it.Cause.Kind != notify.CauseKind || it.Principal == "" && it.Signed != "" {
				t.Errorf("audit item %+v: want cause notify and a signer", it)
			}
		}
	}
	perRule := 1
	if desk != nil {
		perRule = 2 // hook and desk
		keys, summaries, foreign := desk.Shown()
		t.Logf("desktop notifications by key %v: %q", keys, summaries)
		if len(keys) != 2 || foreign != 0 {
			t.Errorf("desktop notifications %v (%d foreign), want one key per rule", keys, foreign)
		}
		for k, n := range keys {
			if n != 1 {
				t.Errorf("desktop notification %s shown %d times, want once", k, n)
			}
		}
	}
	if rules["review_pending"] != perRule || rules["waiting"] != perRule {
		t.Errorf("audit shows notifications %v, want %d per rule", rules, perRule)
	}
}

// auditHas reports whether `audit SESSION` shows a notification.sent
// whose detail has want.
func auditHas(ctx context.Context, p followProcs, sid, want string) bool {
	out, err := p.stdout(ctx, "", "audit", "--json", sid)
	if err != nil {
		return false
	}
	var items []replay.Item
	if json.Unmarshal([]byte(out), &items) != nil {
		return false
	}
	for _, it := range items {
		if it.Type == "notification.sent" && strings.Contains(it.Detail, want) {
			return true
		}
	}
	return false
}

// TestNotify_SinksApartAcrossServeKill: a rule telling failing (a
// webhook answering 500), hook and nobody (nothing listens): hook is told
// at once while failing fails and nobody is unreachable, and serve's log
// names both failures. serve is SIGKILLed with failing still failing; the
// next serve, failing mended, tells failing and not hook again, and
// audit shows one notification.sent for each of them, none for nobody.
func TestNotify_SinksApartAcrossServeKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs real processes")
	}
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	p := followProcs{t: t, bin: soakBuild(t), data: filepath.Join(t.TempDir(), "data")}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var mu sync.Mutex
	got := map[string]int{}   // sink → deliveries taken
	fails, mended := 0, false // of failing
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sink := strings.TrimPrefix(req.URL.Path, "/")
		if sink == "failing" && !mended {
			fails++
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		got[sink]++
	}))
	defer srv.Close()
	if err := os.MkdirAll(p.data, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`[sinks.failing]
type = "webhook"
url = "%[1]s/failing"

[sinks.hook]
type = "webhook"
url = "%[1]s/hook"

[sinks.nobody]
type = "webhook"
url = "http://127.0.0.1:1/"

[[rule]]
on = "review_pending"
after = 0
sinks = ["failing", "hook", "nobody"]
`, srv.URL)
	if err := os.WriteFile(filepath.Join(p.data, notify.File), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var log1 syncBuffer
	s1 := p.serve(ctx, &log1)
	const sid = "5e551011-0000-4000-8000-0000000000a2"
	for _, h := range []map[string]any{
		{"hook_event_name": "SessionStart", "source": "startup", "cwd": "/tmp"},
		{"hook_event_name": "UserPromptSubmit", "prompt": "Push it.", "prompt_id": "p1", "cwd": "/tmp"},
		{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": map[string]any{"command": "git push"}, "cwd": "/tmp"},
		{"hook_event_name": "Notification", "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash", "cwd": "/tmp"},
	} {
		h["session_id"] = sid
		b, _ := json.Marshal(h)
		if out, err := p.run(ctx, string(b), "hook", "claude"); err != nil {
			t.Fatalf("hook: %v\n%s", err, out)
		}
	}
	wait := func(what string, log *syncBuffer, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				mu.Lock()
				t.Fatalf("gave up waiting for %s: got %v, failing failed %d times\n%s", what, got, fails, log.String())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	wait("hook told and recorded while failing fails", &log1, func() bool {
		mu.Lock()
		ok := got["hook"] == 1 && fails >= 1
		mu.Unlock()
		return ok && auditHas(ctx, p, sid, "sink=hook(webhook)")
	})
	wait("both failures in serve's log, at WARN", &log1, func() bool {
		return strings.Contains(log1.String(), `level=WARN msg="notifications: rule review_pending: sink failing (webhook): POST`) &&
			strings.Contains(log1.String(), `level=WARN msg="notifications: rule review_pending: sink nobody (webhook): `)
	})
	if err := syscall.Kill(-s1.c.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s1.exited
	mu.Lock()
	mended = true
	mu.Unlock()

	var log2 syncBuffer
	p.serve(ctx, &log2)
	wait("failing told after the restart", &log2, func() bool {
		mu.Lock()
		ok := got["failing"] == 1
		mu.Unlock()
		return ok && auditHas(ctx, p, sid, "sink=failing(webhook)")
	})
	out, err := p.stdout(ctx, "", "audit", "--json", sid)
	if err != nil {
		t.Fatalf("audit: %v\n%s", err, out)
	}
	var items []replay.Item
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	sinks := map[string]int{}
	for _, it := range items {
		if it.Type != "notification.sent" {
			continue
		}
		for _, kv := range strings.Fields(it.Detail) {
			if s, ok := strings.CutPrefix(kv, "sink="); ok {
				sinks[s]++
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("taken %v; failing failed %d times; recorded %v", got, fails, sinks)
	if got["hook"] != 1 || got["failing"] != 1 || len(sinks) != 2 || sinks["hook(webhook)"] != 1 || sinks["failing(webhook)"] != 1 {
		t.Errorf("taken %v, recorded %v: want hook and failing told and recorded once each, nobody never", got, sinks)
	}
}
