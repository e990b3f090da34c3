package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/replay"
)

// observe posts one harness observation of harness "h" with the given
// signals (JSON objects) for session sess, a subagent of parent when it
// is not "", and returns where its batch landed.
func (e *env) observe(sess, parent, kind string, signals ...string) uint64 {
	e.t.Helper()
	p := ""
	if parent != "" {
		p = fmt.Sprintf(`,"parent":%q`, parent)
	}
	body := fmt.Sprintf(`{"harness":"h","id":%q,"session":%q%s,"kind":%q,"signals":[%s]}`, ulid.Make().String(), sess, p, kind, strings.Join(signals, ","))
	var rep struct{ Last uint64 }
	e.do("POST", "/v1/observations", body, nil, 200, &rep)
	return rep.Last
}

// story is a session built for the timeline: what each of its marks is.
type story struct {
	main, sub, cmd string // the session's, its subagent's and its command's ids
	review         string // the review a person decided
	abandoned      string // the tool call abandoned by the interrupt
	done           string // the tool call that closed
}

// tellStory builds, through the API, the gate and a real worker, session
// h-main: a turn with a tool call that finishes, a wait on a person's
// permission, a review a person allows, a command run to its exit, a
// subagent with its own turn, and a tool call abandoned when the person
// interrupts the turn.
func (e *env) tellStory() story {
	e.t.Helper()
	st := story{main: "h-main", sub: "h-sub1", review: "toolu_push", abandoned: "t-read", done: "t-ls"}
	e.observe("main", "", "start", `{"kind":"session_start","name":"startup"}`, `{"kind":"mode","name":"bypassPermissions"}`)
	e.observe("main", "", "prompt", `{"kind":"prompt","id":"p1","text":"tidy the build"}`)
	e.observe("main", "", "tool", `{"kind":"tool_use","id":"t-ls","name":"Bash"}`)
	e.observe("main", "", "result", `{"kind":"tool_result","id":"t-ls","status":"ok"}`)
	e.observe("main", "", "perm", `{"kind":"tool_use","id":"t-rm","name":"Bash"}`, `{"kind":"permission","id":"t-rm","name":"Bash"}`)
	e.observe("main", "", "result", `{"kind":"tool_result","id":"t-rm","status":"ok"}`)
	verdict := e.gateReview(st.main, st.review)
	e.do("POST", "/v1/reviews/"+st.review, `{"session":"h-main","verdict":"allow","reason":"release branch","by":"alice"}`, nil, 200, nil)
	<-verdict
	e.observe("sub1", "main", "start", `{"kind":"session_start","name":"startup"}`)
	e.observe("sub1", "main", "prompt", `{"kind":"prompt","id":"sp1"}`)
	e.observe("sub1", "main", "tool", `{"kind":"tool_use","id":"s-grep","name":"Grep"}`)
	e.observe("sub1", "main", "result", `{"kind":"tool_result","id":"s-grep","status":"ok"}`)
	e.observe("sub1", "main", "end", `{"kind":"turn_end"}`)
	st.cmd = e.runCommand(st.main, "true")
	e.observe("main", "", "tool", `{"kind":"tool_use","id":"t-read","name":"Read"}`)
	last := e.observe("main", "", "interrupt", `{"kind":"interrupt"}`)
	e.waitSeq(last)
	return st
}

// runCommand has a real worker run argv for session sess to its exit and
// returns the command's id.
func (e *env) runCommand(sess string, argv ...string) string {
	e.t.Helper()
	w, err := worker.New(worker.Config{Conn: e.srv.Conn(), Log: e.log, Reg: e.reg, Grace: 300 * time.Millisecond, Lapse: time.Second, AckWait: 5 * time.Second})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	e.t.Cleanup(func() { cancel(); <-done })
	id := ulid.Make().String()
	cl := e.api.cfg.Output.(*worker.Client)
	req := command.Request{Session: sess, Argv: argv, Workspace: e.t.TempDir(), Mode: events.ModeFullAccess, Env: []string{"PATH=/usr/bin:/bin"}, RequestedBy: "test"}
	if _, err := cl.Request(context.Background(), id, req, nil); err != nil {
		e.t.Fatalf("request %v: %v", argv, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		s, err := cl.Command(context.Background(), id)
		if err == nil && s.Status == command.StatusExited {
			return id
		}
		if err == nil && s.Status != command.StatusRequested && s.Status != command.StatusStarted || time.Now().After(deadline) {
			e.t.Fatalf("command %v: %+v %v", argv, s, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// olderSession copies session from's records into a new session h-<id>
// as an older reducer would have written them: the same observations,
// with decide changing the decisions recorded for them. Cause refs are
// kept pointing at the copied observations.
func (e *env) olderSession(from, id string, decide func(events.Envelope) events.Envelope) string {
	e.t.Helper()
	recs, _, err := e.log.Load(context.Background(), events.Aggregate{Kind: events.KindSession, ID: from})
	if err != nil {
		e.t.Fatal(err)
	}
	agg := events.Aggregate{Kind: events.KindSession, ID: "h-" + id}
	ids := map[string]string{}
	var last uint64
	for _, r := range recs {
		env := r.Envelope
		nid := ulid.Make()
		ids[env.ID.String()] = nid.String()
		env.ID, env.Agg = nid, agg
		if env.Cause != nil {
			c := *env.Cause
			if n, ok := ids[c.Ref]; ok {
				c.Ref = n
			}
			env.Cause = &c
		}
		if _, ok := events.Observed(env.Data); !ok {
			env = decide(env)
		}
		ap, err := e.log.Append(context.Background(), events.Batch{Agg: agg, Expect: last, Events: []events.Envelope{env}})
		if err != nil {
			e.t.Fatalf("append %s: %v", env.Type, err)
		}
		last = ap.Last
	}
	e.waitSeq(last)
	return agg.ID
}

// axis is the timeline's x axis for a session: the sequences of its
// audit items and its subagents', sorted.
func (e *env) axis(ids ...string) []uint64 {
	e.t.Helper()
	seen := map[uint64]bool{}
	var out []uint64
	for _, id := range ids {
		var page struct{ Items []struct{ Seq uint64 } }
		e.get("/v1/sessions/"+id+"/audit", 200, &page)
		for _, it := range page.Items {
			if !seen[it.Seq] {
				seen[it.Seq] = true
				out = append(out, it.Seq)
			}
		}
	}
	slices.Sort(out)
	return out
}

// replayJSON is what `logbook replay --seq seq --session id --json`
// prints: replay.StateAt's State, decoded for comparison.
func (e *env) replayJSON(id string, seq uint64) any {
	e.t.Helper()
	st, err := replay.StateAt(context.Background(), e.log, replay.Point{Seq: seq, Agg: events.Aggregate{Kind: events.KindSession, ID: id}}, id)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	var v any
	json.Unmarshal(b, &v)
	return v
}

// TestSessionAt: /v1/sessions/{id}/at answers what replay folds, for
// every event of a session; bad input is refused naming it.
func TestSessionAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.tellStory()
	for _, seq := range e.axis(st.main) {
		var got any
		e.get(fmt.Sprintf("/v1/sessions/%s/at?seq=%d", st.main, seq), 200, &got)
		if d := cmp.Diff(e.replayJSON(st.main, seq), got); d != "" {
			t.Errorf("at seq %d (-replay +API):\n%s", seq, d)
		}
	}
	last, _ := e.log.LastSeq(t.Context())
	for _, c := range []struct {
		q    string
		code int
		says string
	}{
		{"", 400, "seq is required"},
		{"?seq=", 400, "seq is required"},
		{"?seq=abc", 400, `seq "abc": want a stream sequence`},
		{"?seq=0", 400, `seq "0": want a stream sequence`},
		{"?seq=-3", 400, `seq "-3"`},
		{fmt.Sprintf("?seq=%d", last+100), 400, fmt.Sprintf("past the log's last event sequence %d", last)},
	} {
		var ae apiError
		e.get("/v1/sessions/"+st.main+"/at"+c.q, c.code, &ae)
		if !strings.Contains(ae.Error, c.says) || strings.Contains(ae.Error, "--seq") {
			t.Errorf("at%s: %q, want it to say %q", c.q, ae.Error, c.says)
		}
	}
	var ae apiError
	e.get("/v1/sessions/"+st.sub+"/at?seq=1", 404, &ae) // the subagent began later
	if !strings.Contains(ae.Error, "has no event up to that sequence") {
		t.Errorf("before the session began: %q", ae.Error)
	}
	e.get("/v1/sessions/h-nosuch/at?seq=1", 404, &ae)
	e.get("/v1/sessions/h-nosuch/rederive", 404, &ae)
}

// TestRederiveAPI: a session today's reducer decides as recorded
// agrees; one written by an older reducer shows its first divergence
// with both decision lists.
func TestRederiveAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.tellStory()
	type env struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	var rd struct {
		Observations, Diverged int
		First                  *struct {
			ObsSeq              uint64 `json:"obs_seq"`
			Index               int
			Recorded, Rederived []env
		}
	}
	e.get("/v1/sessions/"+st.main+"/rederive", 200, &rd)
	if rd.Diverged != 0 || rd.Observations == 0 || rd.First != nil {
		t.Errorf("today's session: %+v, want agreement", rd)
	}
	old := e.olderSession(st.sub, "old", olderGrep)
	e.get("/v1/sessions/"+old+"/rederive", 200, &rd)
	if rd.Diverged == 0 || rd.First == nil || len(rd.First.Recorded) <= rd.First.Index || len(rd.First.Rederived) <= rd.First.Index {
		t.Fatalf("older session: %+v, want a divergence with both lists", rd)
	}
	rec, today := rd.First.Recorded[rd.First.Index], rd.First.Rederived[rd.First.Index]
	if rec.Type != "session.entry_opened" || rec.Data["activity"] != "tool:grep" || today.Data["activity"] != "tool:Grep" {
		t.Errorf("first divergence recorded %+v, today %+v; want the entry opened as tool:grep, today tool:Grep", rec, today)
	}
}

// olderGrep is an older reducer's decision: it named the tool's activity
// in lower case.
func olderGrep(env events.Envelope) events.Envelope {
	if d, ok := env.Data.(events.SessionEntryOpened); ok {
		d.Activity = strings.ToLower(d.Activity)
		env.Data = d
	}
	if d, ok := env.Data.(events.SessionActivityChanged); ok {
		d.To = strings.ToLower(d.To)
		env.Data = d
	}
	return env
}
