package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// env is a real server: embedded JetStream, Pebble projections kept by a
// Runner, a Claude Code hook ingester, and the HTTP Server on a loopback
// httptest listener.
type env struct {
	t     testing.TB
	log   *natslog.Log
	srv   *natslog.Server
	store *projections.Store
	ing   *claude.Ingester
	api   *Server
	http  *httptest.Server
	reg   *events.Registry
}

// envSettings are the Server's Config and the test server's own.
type envSettings struct {
	Config
	smallBuffers bool
	peers        bool // the test server's ConnContext is PeerContext
}

type envOption func(*envSettings)

// smallSendBuffers makes the test server's connections keep at most
// 16 KiB in the kernel's send buffer, so a client that stops reading
// blocks the server soon.
func smallSendBuffers(s *envSettings) { s.smallBuffers = true }

// smallListener sets each accepted connection's send buffer to 16 KiB.
type smallListener struct{ net.Listener }

func (l smallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	log, srv := natslogtest.Start(t, natslog.FsyncInterval)
	store, err := projections.Open(t.TempDir()+"/views", projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	ing, err := claude.NewIngester(claude.IngestConfig{Log: log, Reg: reg, Host: "test"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := worker.NewClient(worker.ClientConfig{Conn: srv.Conn(), Log: log, Reg: reg, Host: "test", Actor: "person:test"})
	if err != nil {
		t.Fatal(err)
	}
	set := envSettings{Config: Config{
		Log: log, Store: store, Reg: reg, Host: "test", Output: cl, Loopback: true,
		Timeline: func(ctx context.Context, id string, cmds []string) (any, error) {
			return replay.SessionTimeline(ctx, log, id, cmds)
		},
		Metrics: NewMetrics(MetricsOptions{}),
		Reviews: &gate.Gate{
			Sessions: &events.Executor[session.State]{Log: log, Reg: reg, Init: session.Init, Evolve: session.Evolve, IDs: ulid.Make, Host: "test"},
			Log:      log, Policies: &gate.Policies{DataDir: policyDir(t, `review = ["Bash(git push:*)"]`)},
		},
		Stream: StreamOptions{Heartbeat: 200 * time.Millisecond},
	}}
	for _, o := range opts {
		o(&set)
	}
	api, err := New(set.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	runner := &projections.Runner{Log: log, Store: store, Interval: 5 * time.Millisecond}
	wg.Go(func() { runner.Run(ctx) })
	wg.Go(func() { api.Run(ctx) })
	<-api.hub.Ready()
	hs := httptest.NewUnstartedServer(api.Handler())
	if set.smallBuffers {
		hs.Listener = smallListener{hs.Listener}
	}
	if set.peers {
		hs.Config.ConnContext = PeerContext
	}
	hs.Start()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		wg.Wait()
		store.Close()
	})
	return &env{t: t, log: log, srv: srv, store: store, ing: ing, api: api, http: hs, reg: reg}
}

// hook delivers one Claude Code hook payload for session sid and returns
// where its batch landed.
func (e *env) hook(sid, event string, fields map[string]any) uint64 {
	e.t.Helper()
	p := map[string]any{"session_id": sid, "cwd": "/home/user/project", "hook_event_name": event, "permission_mode": "default",
		"transcript_path": "/home/user/.claude/projects/p/" + sid + ".jsonl"}
	for k, v := range fields {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	id := ulid.Make()
	ap, err := e.ing.Hook(context.Background(), claude.Entry{ID: id.String(), Time: ulid.Time(id.Time()), Payload: b})
	if err != nil {
		e.t.Fatalf("hook %s %s: %v", sid, event, err)
	}
	return ap.Last
}

// Hooks that move a session: a prompt makes it work, a permission
// request makes it wait, the tool's result makes it work again.
func (e *env) prompt(sid, promptID string) uint64 {
	return e.hook(sid, "UserPromptSubmit", map[string]any{"prompt": "secret prompt text " + promptID, "prompt_id": promptID})
}

func (e *env) permission(sid, tool string) uint64 {
	e.hook(sid, "PreToolUse", map[string]any{"tool_name": tool, "tool_use_id": "toolu_" + tool, "tool_input": map[string]any{"command": "rm -rf secret-argument"}})
	return e.hook(sid, "Notification", map[string]any{"message": "Claude needs your permission to use " + tool + " secret", "notification_type": "permission_prompt"})
}

func (e *env) toolDone(sid, tool, useID string) uint64 {
	return e.hook(sid, "PostToolUse", map[string]any{"tool_name": tool, "tool_use_id": useID, "tool_input": map[string]any{"command": "x"}, "tool_response": map[string]any{"stdout": "secret output"}})
}

func (e *env) stop(sid string) uint64 { return e.hook(sid, "Stop", nil) }

// policyDir returns a data dir holding the gate's policy file.
func policyDir(t testing.TB, policy string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, gate.PolicyFile), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// gateReview has the gate open review id on session sid (a git push,
// which the policy says a person reviews) and returns the channel its
// verdict comes on once a person answers it.
func (e *env) gateReview(sid, id string) <-chan gate.Verdict {
	e.t.Helper()
	g := e.api.cfg.Reviews.(*gate.Gate)
	out := make(chan gate.Verdict, 1)
	go func() {
		v, err := g.Decide(context.Background(), gate.Request{Session: sid, Event: gate.EventPreToolUse, Tool: "Bash", ID: id, Ref: ulid.Make().String(), Input: json.RawMessage(`{"command":"git push origin main"}`), BudgetMS: 60000})
		if err != nil {
			e.t.Errorf("gate: %v", err)
		}
		out <- v
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pend struct{ Decisions []Decision }
		e.get("/v1/pending", 200, &pend)
		for _, d := range pend.Decisions {
			if d.Kind == "review" && d.Review == id {
				return out
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("review %s did not open: %+v", id, pend.Decisions)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSeq waits until the projection has applied seq.
func (e *env) waitSeq(seq uint64) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.store.WaitFor(ctx, seq); err != nil {
		e.t.Fatal(err)
	}
}

// auditItem is what the tests read of an item of an audit timeline.
type auditItem struct {
	Type   string `json:"type"`
	To     string `json:"to"`
	Detail string `json:"detail"`
}

// audit returns the items of session id's audit timeline, read from
// /v1/sessions/<id>/audit, which must answer 200.
func (e *env) audit(id string) []auditItem {
	e.t.Helper()
	var page struct {
		Items []auditItem `json:"items"`
	}
	e.get("/v1/sessions/"+id+"/audit", 200, &page)
	return page.Items
}

// get GETs path and decodes the JSON answer into out, failing unless the
// status is want.
func (e *env) get(path string, want int, out any) {
	e.t.Helper()
	e.do("GET", path, "", nil, want, out)
}

func (e *env) do(method, path, body string, hdr http.Header, want int, out any) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if p, ok := out.(*[]byte); ok {
			*p = b
		} else if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return resp
}

func sid(i int) string { return fmt.Sprintf("5e551011-0000-4000-8000-%012d", i) }
