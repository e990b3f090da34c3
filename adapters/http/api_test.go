package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

func TestSessions_FiltersSortAndPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var last uint64
	for i := range 7 {
		last = e.prompt(sid(i), "p1")
	}
	last = max(last, e.permission(sid(1), "Bash"), e.permission(sid(3), "Bash"), e.stop(sid(5)))
	e.waitSeq(last)

	var page sessionsPage
	e.get("/v1/sessions", 200, &page)
	if got := len(page.Sessions); got != 7 || page.Next != "" {
		t.Fatalf("all: %d sessions, next %q; want 7 and none", got, page.Next)
	}
	e.get("/v1/sessions?phase=waiting", 200, &page)
	if got := ids(page.Sessions); !slices.Equal(got, []string{sid(1), sid(3)}) {
		t.Errorf("phase=waiting: %v", got)
	}
	e.get("/v1/sessions?phase=ready", 200, &page)
	if got := ids(page.Sessions); !slices.Equal(got, []string{sid(5)}) {
		t.Errorf("phase=ready: %v", got)
	}
	// How many sessions each filter keeps. Days and calendar days, as
	// usage's since reads them.
	for _, c := range []struct {
		name, query string
		want        int
	}{
		{"cwd prefix", "cwd=/home/user/", 7},
		{"cwd elsewhere", "cwd=/elsewhere", 0},
		{"parent=none since=1h", "parent=none&since=1h", 7},
		{"parent=none since=2d", "parent=none&since=2d", 7},
		{"parent=none since=2000-01-01", "parent=none&since=2000-01-01", 7},
		{"parent=none since=2000-01-01T00:00:00Z", "parent=none&since=2000-01-01T00:00:00Z", 7},
		{"since=2999-01-01", "parent=none&since=2999-01-01", 0},
		{"stale=1h", "stale=1h", 0},
	} {
		e.get("/v1/sessions?"+c.query, 200, &page)
		if len(page.Sessions) != c.want {
			t.Errorf("%s: %d sessions, want %d", c.name, len(page.Sessions), c.want)
		}
	}

	// Paging, in id order and newest-updated first, sees each session once.
	for _, sort := range []string{"id", "-updated", "started"} {
		var seen []string
		cursor := ""
		for range 10 {
			page = sessionsPage{}
			e.get("/v1/sessions?limit=3&sort="+sort+"&cursor="+cursor, 200, &page)
			seen = append(seen, ids(page.Sessions)...)
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if len(seen) != 7 || len(slices.Compact(slices.Sorted(slices.Values(seen)))) != 7 {
			t.Errorf("sort=%s pages: %v", sort, seen)
		}
		if sort == "-updated" && seen[0] != sid(5) {
			t.Errorf("sort=-updated: first %s, want the last one updated %s", seen[0], sid(5))
		}
	}

	for _, bad := range []string{"phase=sleeping", "sort=name", "limit=0", "limit=5000", "stale=soon", "since=yesterday", "cursor=zzz"} {
		var ae apiError
		e.get("/v1/sessions?"+bad, 400, &ae)
		if ae.Code != "bad_request" || ae.Error == "" {
			t.Errorf("%s: %+v", bad, ae)
		}
	}
}

func ids(ss []SessionSummary) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func TestSession_PageAuditAndPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.prompt(sid(1), "p1")
	e.waitSeq(e.permission(sid(1), "Bash"))

	var rep sessionReply
	e.get("/v1/sessions/"+sid(1), 200, &rep)
	if rep.Session.Phase != events.PhaseWaiting || rep.Children == nil || rep.Commands == nil {
		t.Fatalf("session: %+v", rep)
	}
	var sum struct {
		Session SessionSummary `json:"session"`
	}
	e.get("/v1/sessions/"+sid(1)+"?summary=true", 200, &sum)
	if sum.Session.Phase != events.PhaseWaiting || sum.Session.Cwd != "/home/user/project" {
		t.Errorf("summary: %+v", sum.Session)
	}
	var tos []string
	for _, it := range e.audit(sid(1)) {
		if it.Type == "session.transitioned" {
			tos = append(tos, it.To)
		}
	}
	if !slices.Contains(tos, events.PhaseWaiting) {
		t.Errorf("audit transitions %v: want one to waiting", tos)
	}

	// The pending decisions name the session and the tool, never the
	// prompt or the tool's output; a dialog known only from its notice
	// shows no action (the notice's text is not one).
	var raw []byte
	e.get("/v1/pending", 200, &raw)
	var pend struct{ Decisions []Decision }
	json.Unmarshal(raw, &pend)
	if len(pend.Decisions) != 1 || pend.Decisions[0].Session != sid(1) || (pend.Decisions[0].Kind != "waiting" && pend.Decisions[0].Kind != "review") {
		t.Fatalf("pending: %s", raw)
	}
	for _, secret := range []string{"secret", "rm -rf"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("pending holds %q: %s", secret, raw)
		}
	}

	var ae apiError
	e.get("/v1/sessions/nosuch", 404, &ae)
	if ae.Code != "not_found" {
		t.Errorf("missing session: %+v", ae)
	}
	e.get("/v1/commands/nosuch", 404, &ae)
	e.get("/v1/sessions/"+sid(1)+"/commands", 200, nil)
	e.get("/v1/nothing-here", 404, &ae)
}

func TestEvents_PagesBySequence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var last uint64
	for i := range 5 {
		last = e.prompt(sid(i), "p")
	}
	var all []uint64
	after := uint64(0)
	for range 100 {
		var page struct {
			Events []events.Record `json:"-"`
			Raw    []struct {
				Seq uint64 `json:"seq"`
			} `json:"events"`
			Next uint64 `json:"next"`
		}
		e.get("/v1/events?limit=4&after="+itoa(after), 200, &page)
		if len(page.Raw) == 0 {
			break
		}
		for _, r := range page.Raw {
			all = append(all, r.Seq)
		}
		after = page.Next
	}
	if len(all) == 0 || all[len(all)-1] != last || !slices.IsSorted(all) || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("events: %v, want increasing up to %d", all, last)
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestObservations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	post := func(body string, want int) observeReply {
		t.Helper()
		var rep observeReply
		e.do("POST", "/v1/observations", body, nil, want, &rep)
		return rep
	}
	start := post(`{"harness":"mydaemon","id":"o1","session":"s1","kind":"prompt","meta":{"cwd":"/w","model":"m1"},"signals":[{"kind":"prompt","id":"p1"}]}`, 200)
	if start.Session != "mydaemon-s1" || start.Phase != events.PhaseWorking || start.Last == 0 || start.Duplicate {
		t.Fatalf("first observation: %+v", start)
	}
	// The same id again appends nothing.
	again := post(`{"harness":"mydaemon","id":"o1","session":"s1","kind":"prompt","signals":[{"kind":"prompt","id":"p1"}]}`, 200)
	if !again.Duplicate || again.Last != 0 {
		t.Errorf("repeat: %+v", again)
	}
	wait := post(`{"harness":"mydaemon","id":"o2","session":"s1","kind":"ask","signals":[{"kind":"permission","id":"t1","name":"shell"}]}`, 200)
	if wait.Phase != events.PhaseWaiting {
		t.Errorf("permission: %+v", wait)
	}
	e.waitSeq(wait.Last)
	var sum struct{ Session SessionSummary }
	e.get("/v1/sessions/mydaemon-s1?summary=true", 200, &sum)
	if sum.Session.Phase != events.PhaseWaiting || sum.Session.Cwd != "/w" || sum.Session.Agent != "mydaemon" {
		t.Errorf("session row: %+v", sum.Session)
	}

	last, _ := e.log.LastSeq(t.Context())
	for name, body := range map[string]string{
		"not json":         `{"harness":`,
		"unknown field":    `{"harness":"h","id":"x","session":"s","kind":"k","signals":[],"extra":1}`,
		"no harness":       `{"id":"x","session":"s","kind":"k","signals":[]}`,
		"harness caps":     `{"harness":"My Daemon","id":"x","session":"s","kind":"k","signals":[]}`,
		"no id":            `{"harness":"h","session":"s","kind":"k","signals":[]}`,
		"session dot":      `{"harness":"h","id":"x","session":"a.b","kind":"k","signals":[]}`,
		"no kind":          `{"harness":"h","id":"x","session":"s","signals":[]}`,
		"unknown signal":   `{"harness":"h","id":"x","session":"s","kind":"k","signals":[{"kind":"dance"}]}`,
		"long text":        `{"harness":"h","id":"x","session":"s","kind":"k","signals":[{"kind":"text","text":"` + strings.Repeat("a", 201) + `"}]}`,
		"trailing":         `{"harness":"h","id":"x","session":"s","kind":"k","signals":[]} {}`,
		"too many":         `{"harness":"h","id":"x","session":"s","kind":"k","signals":[` + strings.Repeat(`{"kind":"text"},`, 64) + `{"kind":"text"}]}`,
		"session too long": `{"harness":"h","id":"x","session":"` + strings.Repeat("s", 127) + `","kind":"k","signals":[]}`,
		"no signals, new":  `{"harness":"h","id":"x","session":"nosuch","kind":"k","signals":[]}`,
		"no such parent":   `{"harness":"mydaemon","id":"x","session":"sub1","parent":"nosuch","kind":"k","signals":[{"kind":"prompt"}]}`,
		"bad UTF-8 kind":   "{\"harness\":\"h\",\"id\":\"x\",\"session\":\"s\",\"kind\":\"k\xff\",\"signals\":[{\"kind\":\"prompt\"}]}",
		"bad UTF-8 meta":   "{\"harness\":\"h\",\"id\":\"x\",\"session\":\"s\",\"kind\":\"k\",\"meta\":{\"cwd\":\"/w\xc3\"},\"signals\":[{\"kind\":\"prompt\"}]}",
	} {
		var ae apiError
		e.do("POST", "/v1/observations", body, nil, 400, &ae)
		if ae.Code != "bad_request" || !strings.Contains(ae.Error, "observation") && !strings.Contains(ae.Error, "body") {
			t.Errorf("%s: %+v", name, ae)
		}
		if strings.Contains(ae.Error, "bad request") || strings.Contains(ae.Error, "events:") {
			t.Errorf("%s: the message repeats the code or a package prefix: %q", name, ae.Error)
		}
	}
	// A body over the limit: 413, in the same shape, naming the limit.
	var ae apiError
	e.do("POST", "/v1/observations", `{"harness":"h","id":"x","session":"s","kind":"`+strings.Repeat("k", 70<<10)+`","signals":[]}`, nil, 413, &ae)
	if ae.Code != "too_large" || !strings.Contains(ae.Error, "64 KiB") {
		t.Errorf("huge body: %+v", ae)
	}
	if now, _ := e.log.LastSeq(t.Context()); now != last {
		t.Errorf("refused observations appended: last seq %d → %d", last, now)
	}
	// A subagent of a session that exists is taken.
	sub := post(`{"harness":"mydaemon","id":"o3","session":"sub1","parent":"s1","kind":"start","signals":[{"kind":"session_start"}]}`, 200)
	if sub.Session != "mydaemon-sub1" || sub.Last == 0 {
		t.Errorf("subagent of an existing session: %+v", sub)
	}
}

// TestErrorsInOneShape: a method a path does not take (405, with Allow)
// and an unknown API path (404) answer in the API's {error, code} shape.
func TestErrorsInOneShape(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		method, path, allow string
	}{
		{"DELETE", "/v1/sessions", "GET, HEAD"},
		{"POST", "/v1/sessions/" + sid(1), "GET, HEAD"},
		{"GET", "/v1/observations", "POST"},
		{"PUT", "/v1/reviews/r1", "POST"},
		{"POST", "/metrics", "GET, HEAD"},
		{"PUT", "/", "GET, HEAD"},
	} {
		var ae apiError
		resp := e.do(c.method, c.path, "", nil, 405, &ae)
		if ae.Code != "method_not_allowed" || !strings.HasPrefix(ae.Error, c.method+" "+c.path+": this path takes") || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %+v, Allow %q; want method_not_allowed naming %s, Allow %q", c.method, c.path, ae, resp.Header.Get("Allow"), c.method, c.allow)
		}
	}
	var ae apiError
	e.do("POST", "/v1/nope", "{}", nil, 404, &ae)
	if ae.Code != "not_found" || strings.Contains(ae.Error, "events:") {
		t.Errorf("POST to an unknown path: %+v", ae)
	}
	// Every path under /v1/ that no endpoint has is the API's 404, never
	// the board's page: a directory-like path, the prefix itself, a path
	// that names a board file.
	for _, p := range []string{"/v1/", "/v1", "/v1/sessions/", "/v1/nonexistent", "/v1/nonexistent/", "/v1/index.html", "/v1/sessions/x/y/"} {
		for _, m := range []string{"GET", "HEAD"} {
			ae = apiError{}
			resp := e.do(m, p, "", nil, 404, nil)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("%s %s: Content-Type %q, want the API's JSON 404", m, p, ct)
			}
			if m == "GET" {
				e.do(m, p, "", nil, 404, &ae)
				if ae.Code != "not_found" {
					t.Errorf("%s %s: %+v, want not_found", m, p, ae)
				}
			}
		}
	}
	// The board still answers its own paths, and only those: it routes
	// by the fragment, so another path is a 404, not its page.
	for _, p := range []string{"/", "/index.html", "/board.js"} {
		resp := e.do("GET", p, "", nil, 200, nil)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/") {
			t.Errorf("GET %s: Content-Type %q", p, ct)
		}
	}
	for _, p := range []string{"/nope", "/sessions/x", "/board.js/", "/../etc/passwd"} {
		resp := e.do("GET", p, "", nil, 404, nil)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("GET %s: Content-Type %q, want a plain 404", p, ct)
		}
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	tok := &Tokens{Reader: "r-token", Writer: "w-token"}
	e := newEnv(t, func(c *envSettings) { c.Tokens = tok })
	obs := `{"harness":"h","id":"x","session":"s","kind":"k","signals":[{"kind":"prompt"}]}`
	bearer := func(s string) http.Header { return http.Header{"Authorization": {"Bearer " + s}} }
	var ae apiError
	e.do("GET", "/v1/sessions", "", nil, 401, &ae)
	e.do("GET", "/v1/sessions", "", bearer("wrong"), 401, &ae)
	e.do("GET", "/v1/sessions", "", bearer("r-token"), 200, nil)
	e.do("GET", "/v1/sessions", "", http.Header{"Cookie": {"logbook_token=r-token"}}, 200, nil)
	e.do("POST", "/v1/observations", obs, bearer("r-token"), 403, &ae)
	if ae.Code != "forbidden" {
		t.Errorf("reader posts: %+v", ae)
	}
	e.do("POST", "/v1/observations", obs, bearer("w-token"), 200, nil)
	e.do("GET", "/metrics", "", nil, 401, &ae)
	// A page elsewhere cannot post: not as a form, not from its origin.
	e.do("POST", "/v1/observations", obs, http.Header{"Authorization": {"Bearer w-token"}, "Content-Type": {"text/plain"}}, 400, &ae)
	e.do("POST", "/v1/observations", obs, http.Header{"Authorization": {"Bearer w-token"}, "Content-Type": {"application/jsonp"}}, 400, &ae)
	// JSON is read as UTF-8 only, and a request says its type once.
	e.do("POST", "/v1/observations", obs, http.Header{"Authorization": {"Bearer w-token"}, "Content-Type": {"application/json; charset=latin1"}}, 400, &ae)
	e.do("POST", "/v1/observations", obs, http.Header{"Authorization": {"Bearer w-token"}, "Content-Type": {"application/json", "text/plain"}}, 400, &ae)
	// A media type's name is case-insensitive (RFC 9110).
	e.do("POST", "/v1/observations", obs, http.Header{"Authorization": {"Bearer w-token"}, "Content-Type": {"Application/JSON; charset=UTF-8"}}, 200, nil)
	e.do("POST", "/v1/observations", obs, http.Header{"Authorization": {"Bearer w-token"}, "Origin": {"http://evil.example"}}, 403, &ae)
	// Only one Origin is read: two are refused, not judged by the first.
	e.do("POST", "/v1/observations", obs, http.Header{"Authorization": {"Bearer w-token"}, "Origin": {e.http.URL, "http://evil.example"}}, 403, &ae)
	// DNS rebinding: a loopback server answers loopback names only.
	e.do("GET", "/v1/sessions", "", http.Header{"Authorization": {"Bearer r-token"}, "Host": {"evil.example:7070"}}, 200, nil)
	req, _ := http.NewRequest("GET", e.http.URL+"/v1/sessions", nil)
	req.Host = "evil.example:7070"
	req.Header.Set("Authorization", "Bearer r-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("Host evil.example: status %d, want 403", resp.StatusCode)
	}
	e.do("POST", "/v1/reviews/r1", `{"session":"s","verdict":"allow","reason":"ok","by":"alice"}`, bearer("r-token"), 403, &ae)
}

func TestMetrics_Names(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.waitSeq(e.prompt(sid(1), "p"))
	e.do("POST", "/v1/observations", `{"harness":"h","id":"x","session":"s","kind":"k","signals":[{"kind":"prompt"}]}`, nil, 200, nil)
	var body []byte
	// The stored events are counted as the server follows the log.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		e.get("/metrics", 200, &body)
		if strings.Contains(string(body), `logbook_events_total{type="session.started"}`) {
			break
		}
	}
	for _, name := range []string{
		"logbook_appends_total", "logbook_append_seconds_bucket", "logbook_events_total", "logbook_projection_lag_events",
		"logbook_projection_lag_seconds", "logbook_spool_depth", "logbook_commands_active", "logbook_http_streams",
		"logbook_http_observations_total", "go_memstats_heap_inuse_bytes", "go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(string(body), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

func TestPhases_WorkingWaitingWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var sum struct{ Session SessionSummary }
	phase := func(seq uint64) string {
		e.waitSeq(seq)
		e.get("/v1/sessions/"+sid(1)+"?summary=true", 200, &sum)
		return sum.Session.Phase
	}
	if p := phase(e.prompt(sid(1), "p1")); p != "working" {
		t.Fatalf("after prompt: %s", p)
	}
	if p := phase(e.permission(sid(1), "Bash")); p != "waiting" {
		t.Fatalf("after permission: %s", p)
	}
	if p := phase(e.toolDone(sid(1), "Bash", "toolu_Bash")); p != "working" {
		t.Fatalf("after tool result: %s %+v", p, sum.Session)
	}
}

func TestReviews_PersonVerdict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.waitSeq(e.prompt(sid(1), "p1"))
	id := "toolu_push"
	verdict := e.gateReview(sid(1), id)
	var pend struct{ Decisions []Decision }
	var ae apiError
	for body, want := range map[string]int{
		`{"session":"` + sid(1) + `","verdict":"maybe","reason":"r","by":"alice"}`:          400,
		`{"session":"` + sid(1) + `","verdict":"allow","by":"alice"}`:                       400,
		`{"session":"` + sid(1) + `","verdict":"allow","reason":" \t\n","by":"alice"}`:      400,
		`{"session":"` + sid(1) + `","verdict":"allow","reason":"r"}`:                       400,
		`{"session":"` + sid(1) + `","verdict":"allow","reason":"r","by":"alice smith"}`:    400,
		`{"session":"` + sid(1) + `","verdict":"allow","reason":"r","by":"a","extra":true}`: 400,
	} {
		e.do("POST", "/v1/reviews/"+id, body, nil, want, &ae)
	}
	var rep reviewReply
	e.do("POST", "/v1/reviews/"+id, `{"session":"`+sid(1)+`","verdict":"allow","reason":"looks safe","by":"alice"}`, nil, 200, &rep)
	if rep.Actor != "person:alice" || rep.Review.Verdict != "allow" || rep.Review.DecidedBy.Name != "person:alice" {
		t.Errorf("verdict: %+v", rep)
	}
	if v := <-verdict; v.Decision != gate.DecideAllow || v.By.Name != "person:alice" {
		t.Errorf("the gate's waiter got %+v", v)
	}
	// The first answer wins.
	e.do("POST", "/v1/reviews/"+id, `{"session":"`+sid(1)+`","verdict":"deny","reason":"no","by":"bob"}`, nil, 422, &ae)
	if !strings.Contains(ae.Error, "alice") {
		t.Errorf("second answer: %+v, want it to name who decided", ae)
	}
	// The reply names the verdict's sequence: a read that waits for it
	// sees the review decided (the hub's last sequence may be older).
	if rep.Seq == 0 {
		t.Fatalf("verdict reply without its sequence: %+v", rep)
	}
	e.get("/v1/pending?min_seq="+itoa(rep.Seq), 200, &pend)
	if len(pend.Decisions) != 0 {
		t.Errorf("pending after the verdict: %+v", pend.Decisions)
	}
	items := e.audit(sid(1))
	found := false
	for _, it := range items {
		found = found || it.Type == "review.decided" && strings.Contains(it.Detail, "alice")
	}
	if !found {
		t.Errorf("audit has no review.decided by alice: %+v", items)
	}
}

// TestReviews_VerdictEndsTheWait: a gated PreToolUse in a session whose
// turn Logbook never saw start waits for a person; once they answer over
// the API, either way, the session stops waiting and /v1/pending is
// empty (the decided review ends the wait in the reducer, not at the
// agent's next hook).
func TestReviews_VerdictEndsTheWait(t *testing.T) {
	t.Parallel()
	for i, verdict := range []string{"deny", "allow"} {
		t.Run(verdict, func(t *testing.T) {
			e := newEnv(t)
			s := sid(10 + i)
			id := "toolu_Bash"
			e.waitSeq(e.hook(s, "PreToolUse", map[string]any{"tool_name": "Bash", "tool_use_id": id, "tool_input": map[string]any{"command": "git push origin main"}}))
			got := e.gateReview(s, id)
			var sum struct{ Session SessionSummary }
			e.get("/v1/sessions/"+s+"?summary=true", 200, &sum)
			if sum.Session.Phase != "waiting" {
				t.Fatalf("while the review is open: %+v", sum.Session)
			}
			e.do("POST", "/v1/reviews/"+id, `{"session":"`+s+`","verdict":"`+verdict+`","reason":"said so","by":"alice"}`, nil, 200, nil)
			if v := <-got; v.Decision != verdict {
				t.Errorf("the hook got %+v, want %s", v, verdict)
			}
			var pend struct{ Decisions []Decision }
			// Without min_seq the read waits for the projection to reach
			// the log's end, the verdict included: the hub's last
			// sequence may not have seen it yet.
			e.get("/v1/pending", 200, &pend)
			if len(pend.Decisions) != 0 {
				t.Errorf("pending after the verdict: %+v", pend.Decisions)
			}
			e.get("/v1/sessions/"+s+"?summary=true", 200, &sum)
			want := "working tool:Bash" // the allowed call runs
			if verdict == "deny" {
				want = "ready " // the denied call never runs
			}
			if got := sum.Session.Phase + " " + sum.Session.Activity; got != want {
				t.Errorf("after %s: %q, want %q", verdict, got, want)
			}
		})
	}
}

// TestIDPrefixes: a unique prefix of a session's id names it on every
// path that takes one, and in a review's session and id, as on the
// command line; an ambiguous prefix is a bad request listing the ids; a
// prefix nothing begins with is not found.
func TestIDPrefixes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.prompt(sid(3), "p1")
	e.waitSeq(e.prompt(sid(12), "p1"))
	unique := sid(12)[:len(sid(12))-1] // …00001: only sid(12) begins so
	var one sessionReply
	e.get("/v1/sessions/"+unique, 200, &one)
	if one.Session.ID != sid(12) {
		t.Errorf("prefix %s named %q, want %s", unique, one.Session.ID, sid(12))
	}
	var sum struct{ Session SessionSummary }
	e.get("/v1/sessions/"+unique+"?summary=true", 200, &sum)
	if sum.Session.ID != sid(12) {
		t.Errorf("summary by prefix: %+v", sum.Session)
	}
	var audit struct{ Session string }
	e.get("/v1/sessions/"+unique+"/audit", 200, &audit)
	if audit.Session != sid(12) {
		t.Errorf("audit by prefix: session %q", audit.Session)
	}
	e.get("/v1/sessions/"+unique+"/commands", 200, nil)
	e.get("/v1/usage?by=session&session="+unique, 200, nil)

	var ae apiError
	for _, path := range []string{"/v1/sessions/5e551011", "/v1/sessions/5e551011/audit", "/v1/usage?session=5e551011"} {
		e.get(path, 400, &ae)
		if ae.Code != "bad_request" || !strings.Contains(ae.Error, `session id prefix "5e551011" is ambiguous`) ||
			!strings.Contains(ae.Error, sid(3)) || !strings.Contains(ae.Error, sid(12)) {
			t.Errorf("%s: %+v, want the ambiguity with both ids", path, ae)
		}
	}
	for _, path := range []string{"/v1/sessions/0bad", "/v1/sessions/0bad/commands", "/v1/commands/0bad", "/v1/commands/0bad/output"} {
		e.get(path, 404, &ae)
		if ae.Code != "not_found" || !strings.Contains(ae.Error, "0bad") || strings.Contains(ae.Error, "events:") {
			t.Errorf("%s: %+v", path, ae)
		}
	}

	// A review: the session and the open review by prefix.
	verdict := e.gateReview(sid(12), "toolu_push_a")
	var rep reviewReply
	e.do("POST", "/v1/reviews/toolu_push", `{"session":"`+unique+`","verdict":"allow","reason":"ok","by":"alice"}`, nil, 200, &rep)
	if rep.Review.ID != "toolu_push_a" || rep.Review.Verdict != "allow" {
		t.Errorf("review by prefix: %+v", rep)
	}
	if v := <-verdict; v.Decision != gate.DecideAllow {
		t.Errorf("the gate's waiter got %+v", v)
	}
}

// TestPending_RecorderDialogIsOneWaitingRow: a permission dialog a
// recorder-only hook reports twice (PermissionRequest without a
// tool_use_id, then Notification permission_prompt) is one row of
// /v1/pending, "waiting" (answered on the agent's screen, not through
// Logbook), not two "review" rows nobody can answer; once the call's
// result comes, none.
func TestPending_RecorderDialogIsOneWaitingRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.prompt(sid(1), "p1")
	e.hook(sid(1), "PermissionRequest", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{"command": "rm -rf build"}})
	e.waitSeq(e.permission(sid(1), "Bash"))
	var pend struct{ Decisions []Decision }
	e.get("/v1/pending?min_seq="+itoa(e.api.hub.Last()), 200, &pend)
	if len(pend.Decisions) != 1 || pend.Decisions[0].Kind != "waiting" || pend.Decisions[0].Review != "" {
		t.Fatalf("pending: %+v; want one waiting row", pend.Decisions)
	}
	e.waitSeq(e.toolDone(sid(1), "Bash", "toolu_Bash"))
	e.get("/v1/pending?min_seq="+itoa(e.api.hub.Last()), 200, &pend)
	if len(pend.Decisions) != 0 {
		t.Errorf("pending after the result: %+v", pend.Decisions)
	}
}

// TestPending_ToolActionAndBudget: each pending decision names its tool
// and a short action, redacted and cut (ActionCut bytes, on one line),
// a review its deadline (request time plus budget); a question names
// its tool and no action. The session list prices each session's own
// spend as `session show` does and says what time the server had.
func TestPending_ToolActionAndBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.prompt(sid(1), "p1")
	e.hook(sid(1), "PermissionRequest", map[string]any{"tool_name": "Bash", "tool_input": map[string]any{
		"command": "curl -H 'Authorization: Bearer ghp_0123456789abcdefghijABCDEFGHIJ012345'\n\t  https://example.com/" + strings.Repeat("x", 200)}})
	e.prompt(sid(2), "p1")
	e.hook(sid(2), "PreToolUse", map[string]any{"tool_name": "AskUserQuestion", "tool_use_id": "toolu_q", "tool_input": map[string]any{"questions": []any{map[string]any{"question": "secret question?"}}}})
	e.waitSeq(e.prompt(sid(3), "p1"))
	before := time.Now()
	verdict := e.gateReview(sid(3), "toolu_push")
	defer func() {
		e.do("POST", "/v1/reviews/toolu_push", `{"session":"`+sid(3)+`","verdict":"deny","reason":"no","by":"alice"}`, nil, 200, nil)
		<-verdict
	}()
	var pend struct{ Decisions []Decision }
	e.get("/v1/pending?min_seq="+itoa(e.api.hub.Last()), 200, &pend)
	by := map[string]Decision{}
	for _, d := range pend.Decisions {
		by[d.Session] = d
	}
	if d := by[sid(1)]; d.Kind != "waiting" || d.Tool != "Bash" || !strings.HasPrefix(d.Action, "curl -H 'Authorization: Bearer [REDACTED") ||
		strings.Contains(d.Action, "ghp_") || strings.ContainsAny(d.Action, "\n\t") || len(d.Action) > ActionCut || !strings.HasSuffix(d.Action, "…") {
		t.Errorf("the dialog's decision: %+v; want Bash and its command redacted, on one line, cut to %d bytes", d, ActionCut)
	}
	if d := by[sid(2)]; d.Tool != "AskUserQuestion" || d.Action != "" || d.Activity != "question" {
		t.Errorf("the question's decision: %+v; want its tool and no action", d)
	}
	d := by[sid(3)]
	if d.Kind != "review" || d.Tool != "Bash" || d.Action != "git push origin main" || d.Deadline.Before(before.Add(time.Minute-time.Second)) || d.Deadline.After(time.Now().Add(time.Minute)) {
		t.Errorf("the review's decision: %+v; want Bash, git push origin main and a deadline a minute after it was asked", d)
	}

	importDir(t, e, usageFixture(t))
	var page sessionsPage
	e.get("/v1/sessions?limit=1000", 200, &page)
	if page.Now.IsZero() || page.PriceError != "" {
		t.Errorf("page now %v, price error %q", page.Now, page.PriceError)
	}
	priced := 0
	for _, s := range page.Sessions {
		st, err := e.store.Session(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		sp := usage.SpendOf([]session.State{st}, usage.Shipped())
		if s.Tokens != sp.Tokens.Total() || !cmp.Equal(s.Cost, sp.Cost) || !cmp.Equal(s.Unpriced, sp.Unpriced) {
			t.Errorf("%s: tokens %d, cost %v, unpriced %v; session show's %s", s.ID, s.Tokens, s.Cost, s.Unpriced, sp.Text)
		}
		if s.Cost != nil {
			priced++
		}
	}
	if priced == 0 {
		t.Errorf("no session has a cost")
	}
}
