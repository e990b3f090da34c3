package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestErrors_NoGoInternalText: bad bodies and ids are answered in the
// request's terms, never with Go types, package prefixes or escaped bytes.
func TestErrors_NoGoInternalText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.waitSeq(e.prompt(sid(1), "p1"))
	for _, tt := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"POST", "/v1/reviews/r1", `[1,2]`, 400, `body: must be a JSON object with the fields \"session\", \"verdict\", \"reason\", \"by\", got an array`},
		{"POST", "/v1/reviews/r1", `"x"`, 400, `got a string`},
		{"POST", "/v1/reviews/r1", `{"verdict":3}`, 400, `field \"verdict\": want a string, got a number`},
		{"POST", "/v1/reviews/r1", `{"verdict":`, 400, `not valid JSON`},
		{"GET", "/v1/sessions/nosuch", "", 404, `session nosuch: not found`},
		{"GET", "/v1/sessions/%FF%FE", "", 400, `session id is not valid: it holds a byte that is not printable ASCII at offset 0`},
		{"GET", "/v1/sessions/%FF%FE/audit", "", 400, `session id is not valid`},
		// A query parameter the endpoint does not take is refused, not
		// ignored: "from" is the command line's name for "after".
		{"GET", "/v1/events?from=90", "", 400, `unknown query parameter \"from\": /v1/events takes after, limit`},
		{"GET", "/v1/sessions?phase=working&bogus=1", "", 400, `unknown query parameter \"bogus\": /v1/sessions takes phase, stale`},
		{"GET", "/v1/status?x=1", "", 400, `unknown query parameter \"x\": /v1/status takes no query parameter`},
		{"GET", "/v1/sessions?limit=1&limit=5000", "", 400, `query parameter \"limit\" given 2 times: /v1/sessions takes one value for it`},
		{"GET", "/v1/sessions?stale=true&stale=", "", 400, `query parameter \"stale\" given 2 times`},
		{"GET", "/v1/usage?explain=true&check=true&by=model", "", 200, `"by"`},
		// A query that does not parse whole is refused, not read in part:
		// Go's reading drops a pair holding ";" and keeps the rest.
		{"GET", "/v1/events?after=3;junk=1&limit=1", "", 400, `invalid semicolon separator in query`},
		{"GET", "/v1/sessions?limit=1;phase=waiting", "", 400, `escape \";\" as %3B`},
		{"GET", "/v1/events?after=%zz", "", 400, `invalid URL escape`},
		{"GET", "/v1/sessions/" + sid(1) + "?summary=yes", "", 400, `summary \"yes\": want true or false`},
		{"GET", "/v1/sessions/" + sid(1) + "?summary=TRUE", "", 400, `want true or false`},
		{"GET", "/v1/sessions/" + sid(1) + "?summary=false", "", 200, `"session"`},
		{"GET", "/v1/sessions/" + sid(1) + "?summary=", "", 400, `summary \"\": want true or false`},
		{"GET", "/v1/sessions/" + sid(1) + "?summary", "", 400, `want true or false`},
		{"GET", "/v1/usage?explain=1", "", 400, `explain \"1\": want true or false`},
		{"GET", "/v1/usage?check=yes", "", 400, `check \"yes\": want true or false`},
	} {
		req, _ := http.NewRequest(tt.method, e.http.URL+tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s %s %s: %d %s, want %d holding %s", tt.method, tt.path, tt.body, resp.StatusCode, b, tt.code, tt.want)
		}
		for _, bad := range []string{"json:", "Go value", "httpapi.", "events:", `\\x`, "unmarshal"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s %s: Go-internal text %q in %s", tt.method, tt.path, bad, b)
			}
		}
	}
}

// TestDuplicateKeys: a body naming a field twice, at any depth and in
// any case (encoding/json would keep the last), is refused with 400
// naming the key, and nothing is appended.
func TestDuplicateKeys(t *testing.T) {
	e := newEnv(t)
	e.waitSeq(e.prompt(sid(1), "p1"))
	last, _ := e.log.LastSeq(t.Context())
	for _, c := range []struct{ path, body, key string }{
		{"/v1/observations", `{"harness":"h","id":"x","session":"r1","kind":"k","signals":[{"kind":"prompt"}],"harness":"evil"}`, `\"harness\"`},
		{"/v1/observations", `{"harness":"h","id":"x","session":"r1","kind":"k","signals":[{"kind":"prompt"}],"Harness":"evil"}`, `\"Harness\"`},
		{"/v1/observations", `{"harness":"h","id":"x","session":"r1","kind":"k","meta":{"model":"a","model":"b"},"signals":[{"kind":"prompt"}]}`, `\"meta.model\"`},
		{"/v1/observations", `{"harness":"h","id":"x","session":"r1","kind":"k","signals":[{"kind":"prompt","kind":"text"}]}`, `\"signals[0].kind\"`},
		{"/v1/reviews/r1", `{"session":"` + sid(1) + `","verdict":"deny","verdict":"allow"}`, `\"verdict\"`},
	} {
		var ae apiError
		e.do("POST", c.path, c.body, nil, 400, &ae)
		if ae.Code != "bad_request" || !strings.Contains(ae.Error, "duplicate key "+strings.ReplaceAll(c.key, `\"`, `"`)) {
			t.Errorf("%s %s: %+v, want bad_request naming %s", c.path, c.body, ae, c.key)
		}
	}
	if now, _ := e.log.LastSeq(t.Context()); now != last {
		t.Errorf("refused bodies appended: last seq %d → %d", last, now)
	}
}

// TestObservations_ParentRefused: a parent the server would not record
// is refused with 400 naming why, never dropped: the session itself, the
// session's own subagent, and a parent other than the one a session
// started with (a parent is set only at the start). The parent it
// started with is taken again.
func TestObservations_ParentRefused(t *testing.T) {
	e := newEnv(t)
	var rep observeReply
	e.do("POST", "/v1/observations", `{"harness":"h","id":"o1","session":"A","kind":"k","signals":[{"kind":"session_start"}]}`, nil, 200, &rep)
	e.do("POST", "/v1/observations", `{"harness":"h","id":"o2","session":"B","parent":"A","kind":"k","signals":[{"kind":"session_start"}]}`, nil, 200, &rep)
	e.do("POST", "/v1/observations", `{"harness":"h","id":"o3","session":"C","kind":"k","signals":[{"kind":"session_start"}]}`, nil, 200, &rep)
	e.waitSeq(rep.Last)
	last, _ := e.log.LastSeq(t.Context())
	for _, c := range []struct{ body, want string }{
		{`{"harness":"h","id":"x1","session":"A","parent":"A","kind":"k","signals":[{"kind":"prompt"}]}`, `parent "A": a session cannot be its own parent`},
		{`{"harness":"h","id":"x2","session":"N","parent":"N","kind":"k","signals":[{"kind":"session_start"}]}`, `parent "N": a session cannot be its own parent`},
		{`{"harness":"h","id":"x3","session":"A","parent":"B","kind":"k","signals":[{"kind":"prompt"}]}`, `parent "B": session h-B is a subagent of h-A, so it cannot be its parent`},
		{`{"harness":"h","id":"x4","session":"A","parent":"C","kind":"k","signals":[{"kind":"prompt"}]}`, `parent "C": session h-A started with no parent, and a parent is set only when a session starts`},
		{`{"harness":"h","id":"x5","session":"B","parent":"C","kind":"k","signals":[{"kind":"prompt"}]}`, `parent "C": session h-B started with parent h-A, and a parent is set only when a session starts`},
	} {
		var ae apiError
		e.do("POST", "/v1/observations", c.body, nil, 400, &ae)
		if ae.Code != "bad_request" || !strings.Contains(ae.Error, c.want) {
			t.Errorf("%s: %+v, want bad_request holding %s", c.body, ae, c.want)
		}
	}
	if now, _ := e.log.LastSeq(t.Context()); now != last {
		t.Errorf("refused observations appended: last seq %d → %d", last, now)
	}
	e.do("POST", "/v1/observations", `{"harness":"h","id":"o4","session":"B","parent":"A","kind":"k","signals":[{"kind":"prompt"}]}`, nil, 200, &rep)
	if rep.Last == 0 {
		t.Errorf("the parent B started with, again: %+v", rep)
	}
}

// TestObservations_AnotherAgentsSession: a harness never writes into a
// session Claude Code's or Codex CLI's reports made, even when the ids
// meet (a harness named "agent" and a Claude Code subagent's
// "agent-<id>"), and may not call its agent one Logbook reads itself;
// its own session may name its agent as it likes; nothing refused is
// appended.
func TestObservations_AnotherAgentsSession(t *testing.T) {
	e := newEnv(t)
	var rep observeReply
	e.do("POST", "/v1/observations", `{"harness":"h","id":"o1","session":"A","kind":"k","meta":{"agent":"tool-one"},"signals":[{"kind":"session_start"}]}`, nil, 200, &rep)
	e.do("POST", "/v1/observations", `{"harness":"h","id":"o2","session":"A","kind":"k","signals":[{"kind":"prompt"}]}`, nil, 200, &rep)
	// A Claude Code subagent: its session is "agent-" and its agent_id.
	e.waitSeq(max(rep.Last, e.hook("parent1", "UserPromptSubmit", map[string]any{"prompt": "hi", "agent_id": "sub1"})))
	last, _ := e.log.LastSeq(t.Context())
	for _, c := range []struct {
		body, status, want string
	}{
		{`{"harness":"agent","id":"x1","session":"sub1","kind":"k","signals":[{"kind":"session_end"}]}`, "400", `session "agent-sub1": a Claude Code subagent's session is "agent-" and its agent_id`},
		{`{"harness":"h","id":"x3","session":"B","kind":"k","meta":{"agent":"claude-code"},"signals":[{"kind":"session_start"}]}`, "400", `meta.agent "claude-code": reads as claude-code, an agent Logbook reads itself`},
		// Spelled so that a person reads the same name: case, spaces,
		// another separator, fullwidth or look-alike letters, a
		// zero-width space.
		{`{"harness":"h","id":"x4","session":"B","kind":"k","meta":{"agent":"Claude-Code"},"signals":[{"kind":"session_start"}]}`, "400", `meta.agent "Claude-Code": reads as claude-code`},
		{`{"harness":"h","id":"x5","session":"B","kind":"k","meta":{"agent":" codex "},"signals":[{"kind":"session_start"}]}`, "400", `meta.agent " codex ": reads as codex`},
		{`{"harness":"h","id":"x6","session":"B","kind":"k","meta":{"agent":"claude_code"},"signals":[{"kind":"session_start"}]}`, "400", `reads as claude-code`},
		{`{"harness":"h","id":"x7","session":"B","kind":"k","meta":{"agent":"Claude Code"},"signals":[{"kind":"session_start"}]}`, "400", `reads as claude-code`},
		{`{"harness":"h","id":"x8","session":"B","kind":"k","meta":{"agent":"\uff23\uff4f\uff44\uff45\uff58"},"signals":[{"kind":"session_start"}]}`, "400", `reads as codex`},
		{`{"harness":"h","id":"x9","session":"B","kind":"k","meta":{"agent":"\u0441od\u0435x"},"signals":[{"kind":"session_start"}]}`, "400", `reads as codex`},
		{`{"harness":"h","id":"x10","session":"B","kind":"k","meta":{"agent":"co\u200bdex"},"signals":[{"kind":"session_start"}]}`, "400", `reads as codex`},
		{`{"harness":"h","id":"x11","session":"B","kind":"k","meta":{"agent":"claude\u2013code"},"signals":[{"kind":"session_start"}]}`, "400", `reads as claude-code`},
		// Latin small capitals, which NFKD leaves alone, and a control
		// character inside.
		{`{"harness":"h","id":"x14","session":"B","kind":"k","meta":{"agent":"\u1d04odex"},"signals":[{"kind":"session_start"}]}`, "400", `reads as codex`},
		{`{"harness":"h","id":"x15","session":"B","kind":"k","meta":{"agent":"c\u1d0fdex"},"signals":[{"kind":"session_start"}]}`, "400", `reads as codex`},
		{`{"harness":"h","id":"x16","session":"B","kind":"k","meta":{"agent":"c\u0000odex"},"signals":[{"kind":"session_start"}]}`, "400", `reads as codex`},
		// With no meta.agent the agent is the harness's name.
		{`{"harness":"codex","id":"x12","session":"B","kind":"k","signals":[{"kind":"session_start"}]}`, "400", `harness "codex" with no meta.agent: the session's agent would be "codex", which reads as codex`},
		{`{"harness":"claude_code","id":"x13","session":"B","kind":"k","signals":[{"kind":"session_start"}]}`, "400", `reads as claude-code`},
	} {
		var ae apiError
		code, _ := strconv.Atoi(c.status)
		e.do("POST", "/v1/observations", c.body, nil, code, &ae)
		if !strings.Contains(ae.Error, c.want) {
			t.Errorf("%s: %+v, want %s holding %s", c.body, ae, c.status, c.want)
		}
	}
	if now, _ := e.log.LastSeq(t.Context()); now != last {
		t.Errorf("refused observations appended: last seq %d → %d", last, now)
	}
	// Names that only hold one of those agents' names are the harness's.
	for i, agent := range []string{"claude-code-helper", "my-codex", "claude", "codexx"} {
		e.do("POST", "/v1/observations", fmt.Sprintf(`{"harness":"h","id":"ok%d","session":"C%d","kind":"k","meta":{"agent":%q},"signals":[{"kind":"session_start"}]}`, i, i, agent), nil, 200, &rep)
	}
}

// TestObservations_AgentSessionIDsReserved: a harness whose session id
// would be one the agents Logbook reads name theirs with (a Claude Code
// subagent's agent-<id>, a Claude Code or Codex CLI session's UUID, a
// copy's <uuid>-r1; as session or as parent) is refused (400, saying
// why) and nothing is appended, before the agent's own session exists
// too: posted first, it would have kept the agent's hooks out. The
// subagent's own hooks then land on its session.
func TestObservations_AgentSessionIDsReserved(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ body, want string }{
		{`{"harness":"agent","id":"e1","session":"b0b0","kind":"k","signals":[{"kind":"prompt","id":"p"}]}`, `session "agent-b0b0": a Claude Code subagent's session`},
		{`{"harness":"5e551011","id":"e2","session":"0000-4000-8000-000000000001","kind":"k","signals":[{"kind":"prompt","id":"p"}]}`, `session "5e551011-0000-4000-8000-000000000001": a Claude Code or Codex CLI session's id begins with a UUID`},
		{`{"harness":"5e551011","id":"e3","session":"0000-4000-8000-00000000000A-r1","kind":"k","signals":[{"kind":"prompt","id":"p"}]}`, `begins with a UUID`},
		{`{"harness":"agent","id":"e5","session":"s","kind":"k","signals":[{"kind":"prompt","id":"p"}]}`, `session "agent-s"`},
	} {
		var ae apiError
		e.do("POST", "/v1/observations", c.body, nil, 400, &ae)
		if ae.Code != "bad_request" || !strings.Contains(ae.Error, c.want) {
			t.Errorf("%s: %+v, want 400 holding %s", c.body, ae, c.want)
		}
	}
	if last, _ := e.log.LastSeq(t.Context()); last != 0 {
		t.Errorf("refused observations appended up to %d", last)
	}
	// A UUID-shaped parent is refused as well.
	var ae apiError
	e.do("POST", "/v1/observations", `{"harness":"5e551011","id":"e6","session":"own","parent":"0000-4000-8000-000000000001","kind":"k","signals":[{"kind":"prompt","id":"p"}]}`, nil, 400, &ae)
	if !strings.Contains(ae.Error, `parent "5e551011-0000-4000-8000-000000000001"`) {
		t.Errorf("a UUID-shaped parent: %+v", ae)
	}
	// The subagent's own hook lands on its session.
	e.waitSeq(e.hook("parent1", "UserPromptSubmit", map[string]any{"prompt": "hi", "agent_id": "b0b0"}))
	st, err := e.store.Session("agent-b0b0")
	if err != nil || st.Agent != "claude-code" {
		t.Errorf("session agent-b0b0: %+v, %v; want Claude Code's", st, err)
	}
}

// TestObservations_HarnessNameDash: the session aggregate is
// "<harness>-<session>", so a harness name with a '-' would name another
// harness's session ("foo-bar" + "baz" is "foo" + "bar-baz"): it is
// refused (400, saying why) and nothing is appended; the session "foo"
// posts as "bar-baz" is its own.
func TestObservations_HarnessNameDash(t *testing.T) {
	e := newEnv(t)
	var ae apiError
	e.do("POST", "/v1/observations", `{"harness":"foo-bar","id":"e1","session":"baz","kind":"k","meta":{"cwd":"/srv/a"},"signals":[{"kind":"prompt","id":"p1"}]}`, nil, 400, &ae)
	if ae.Code != "bad_request" || !strings.Contains(ae.Error, `harness "foo-bar": '-' separates the harness from the session`) {
		t.Errorf("a harness with a dash: %+v", ae)
	}
	if last, _ := e.log.LastSeq(t.Context()); last != 0 {
		t.Errorf("refused observation appended up to %d", last)
	}
	var rep observeReply
	e.do("POST", "/v1/observations", `{"harness":"foo","id":"e2","session":"bar-baz","kind":"k","signals":[{"kind":"prompt","id":"p1"}]}`, nil, 200, &rep)
	if rep.Session != "foo-bar-baz" || rep.Last == 0 {
		t.Errorf("harness foo's session bar-baz: %+v", rep)
	}
}

// TestWrite_SlowBodyCutOff: a write that announces a body and never sends
// it is cut off at the body timeout instead of holding its connection
// open, and appends nothing.
func TestWrite_SlowBodyCutOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(s *envSettings) { s.BodyTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", e.http.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/observations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"harness\":")
	// The guard against a hang is the test's own; the server must end
	// the request long before it.
	c.SetReadDeadline(time.Now().Add(time.Minute))
	b, err := io.ReadAll(c)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the request still holds its connection: %q", b)
	}
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 4") {
		t.Errorf("answer %q, want a refusal or the connection closed", b)
	}
	if last, _ := e.log.LastSeq(t.Context()); last != 0 {
		t.Errorf("appended up to %d", last)
	}
}
