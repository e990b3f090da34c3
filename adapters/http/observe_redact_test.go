package httpapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
)

// postedSecret is a secret of one shape and the part of it that must
// never be seen again (the whole token, or a password without its user).
type postedSecret struct{ name, text, core string }

// postedSecrets are secrets of several shapes, spelled in pieces so that
// no scanner takes this file for a leak. custom is caught only by the
// server's own rule (as redact.txt adds one).
func postedSecrets() []postedSecret {
	aws := "AK" + "IA" + "QYLPMN5HHHFPZAM2"
	gh := "gh" + "p_" + "4Nd8fKq2ZbX9vLm3Qw7Rt1Yp6Hs0Jc5Ue2Ia"
	slack := "xo" + "xb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	stripe := "sk" + "_live_" + "9fQ2mZ7xKp4LwR8tYv3NbJ6c"
	jwt := "ey" + "JhbGciOiJIUzI1NiJ9." + "ey" + "JzdWIiOiJ4In0.c2lnbmF0dXJlX29mX2p3dA"
	return []postedSecret{
		{"aws", aws, aws},
		{"github", gh, gh},
		{"slack", slack, slack},
		{"stripe", stripe, stripe},
		{"jwt", jwt, jwt},
		{"url", "https://admin:" + "Zq8hunter2supersecret" + "@db.example", "Zq8hunter2supersecret"},
		{"assignment", "DB_PASSWORD=" + "correcthorse9battery", "correcthorse9battery"},
		{"custom", "acme-" + "7731924", "acme-7731924"},
	}
}

// TestObservations_Redacted posts observations that carry a secret in
// every string field, to a real server with a custom rule: none of the
// secrets is in the log, the projection, the live stream or any answer;
// each field shows the redaction in its place. An id that looks like a
// secret (the observation's, or an agent's id in meta or a signal) is
// refused naming the field, not the value, and appends nothing.
func TestObservations_Redacted(t *testing.T) {
	t.Parallel()
	red, err := redact.New([]string{`acme-[0-9]{7}`})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(s *envSettings) { s.Redactor = red })
	secrets := postedSecrets()
	var answers []string
	var last uint64
	for i, s := range secrets {
		in := "x " + s.text + " y"
		body, _ := json.Marshal(map[string]any{
			"harness": "mydaemon", "id": fmt.Sprintf("evt-%d", i), "session": fmt.Sprintf("run-%d", i),
			"kind": in,
			"meta": map[string]string{
				"cwd": "/srv/" + s.text, "title": in, "model": in, "version": in, "git_branch": in,
				"agent_mode": in, "agent_type": in, "agent": in,
				"session_id": "agent-s", "agent_id": "agent-a",
			},
			"signals": []map[string]string{
				{"kind": "prompt", "id": "p-1", "text": "key " + s.text},
				{"kind": "text", "text": in},
				{"kind": "tool_use", "id": "t-1", "name": in, "task": "bg-1", "status": in, "text": "curl " + s.text},
				{"kind": "permission", "id": "t-1", "name": in},
			},
		})
		var rep []byte
		e.do("POST", "/v1/observations", string(body), nil, 200, &rep)
		answers = append(answers, string(rep))
		var r observeReply
		json.Unmarshal(rep, &r)
		last = r.Last
	}
	e.waitSeq(last)

	// The fields hold the redaction, not nothing.
	var row struct{ Session SessionSummary }
	e.get("/v1/sessions/mydaemon-run-0?summary=true", 200, &row)
	if !strings.Contains(row.Session.Cwd, "[REDACTED:") || row.Session.Phase != events.PhaseWaiting {
		t.Errorf("session row: cwd %q phase %q, want the cwd redacted and the session waiting", row.Session.Cwd, row.Session.Phase)
	}

	// Ids that name things on the log cannot be redacted: refused.
	ids := []string{"harness", "id", "session", "parent"}
	for _, s := range secrets {
		tok := strings.NewReplacer(":", "", "/", "", "@", "", ".", "", "=", "", " ", "").Replace(s.text)
		for _, field := range ids {
			o := map[string]any{"harness": "mydaemon", "id": "evt-x", "session": "run-x", "kind": "k",
				"signals": []map[string]string{{"kind": "prompt"}}}
			switch field {
			case "harness":
				o[field] = strings.ToLower(strings.ReplaceAll(tok, "_", "-"))
			case "parent":
				o[field] = tok
				o["session"] = "sub-x"
			default:
				o[field] = tok
			}
			if red.Redact(fmt.Sprint(o[field])) == o[field] {
				continue // this shape needs what an id cannot hold
			}
			body, _ := json.Marshal(o)
			var rep []byte
			e.do("POST", "/v1/observations", string(body), nil, 400, &rep)
			answers = append(answers, string(rep))
			if !strings.Contains(string(rep), field) {
				t.Errorf("%s in %s: answer %s, want it to name the field", s.name, field, rep)
			}
		}
	}
	// Nor are the agent's ids in meta and signals, which name entries:
	// refused too, naming the field.
	for _, s := range secrets {
		for _, c := range []struct{ field, meta, sig string }{
			{"session id", "session_id", ""}, {"agent id", "agent_id", ""}, {"forked-from session id", "forked_from", ""},
			{"tool_use id", "", "id"}, {"tool_use task id", "", "task"},
		} {
			o := map[string]any{"harness": "mydaemon", "id": "evt-y", "session": "run-y", "kind": "k"}
			if c.meta != "" {
				o["meta"] = map[string]string{c.meta: "x " + s.text}
				o["signals"] = []map[string]string{{"kind": "prompt"}}
			} else {
				o["signals"] = []map[string]string{{"kind": "tool_use", c.sig: s.text}}
			}
			body, _ := json.Marshal(o)
			var rep []byte
			e.do("POST", "/v1/observations", string(body), nil, 400, &rep)
			answers = append(answers, string(rep))
			if !strings.Contains(string(rep), c.field+" looks like a secret") {
				t.Errorf("%s in %s: answer %s, want it to name the field", s.name, c.field, rep)
			}
		}
	}
	// An error that quotes what was sent shows it redacted.
	for _, s := range secrets {
		q, _ := json.Marshal(s.text)
		for _, body := range []string{
			`{"harness":"mydaemon","id":"e","session":"s","kind":"k","signals":[],` + string(q) + `:1}`,
			`{"harness":"mydaemon","id":"e","session":"s","kind":"k","at":` + string(q) + `,"signals":[]}`,
			`{"harness":"mydaemon","id":"e","session":"s","kind":"k","signals":[{"kind":` + string(q) + `}]}`,
			`{"harness":` + string(q) + `,"id":"e","session":"s","kind":"k","signals":[]}`,
		} {
			var rep []byte
			e.do("POST", "/v1/observations", body, nil, 400, &rep)
			answers = append(answers, string(rep))
		}
	}
	// Usage and plan-limit readings, which carry strings of their own,
	// are not taken from a harness.
	for _, sig := range []string{`{"kind":"text","usage":{"model":"m","input":1}}`, `{"kind":"text","limit":{"account":"a","window":"w","used_percent":1}}`} {
		var ae apiError
		e.do("POST", "/v1/observations", `{"harness":"mydaemon","id":"u","session":"run-0","kind":"k","signals":[`+sig+`]}`, nil, 400, &ae)
		if !strings.Contains(ae.Error, "usage and limit") {
			t.Errorf("signal %s: %+v", sig, ae)
		}
	}
	// Nor is usage evidence, which is the decider's.
	{
		var ae apiError
		e.do("POST", "/v1/observations", `{"harness":"mydaemon","id":"u","session":"run-0","kind":"k","signals":[{"kind":"text","counted":"seen"}]}`, nil, 400, &ae)
		if !strings.Contains(ae.Error, "signals[0].counted") {
			t.Errorf("a counted signal: %+v", ae)
		}
	}
	if now, _ := e.log.LastSeq(t.Context()); now != last {
		t.Errorf("refused observations appended: last seq %d → %d", last, now)
	}

	// Everything that shows what was stored.
	for m, err := range e.log.ReadRaw(t.Context(), "lb.>", 1) {
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, "log "+m.Subject+" "+string(m.Data))
	}
	for i := range secrets {
		id := fmt.Sprintf("mydaemon-run-%d", i)
		st, err := e.store.Session(id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(st)
		answers = append(answers, "projection "+string(b))
		for _, p := range []string{"/v1/sessions/" + id, "/v1/sessions/" + id + "/audit", "/v1/sessions/" + id + "?summary=true"} {
			var b []byte
			e.get(p, 200, &b)
			answers = append(answers, p+" "+string(b))
		}
	}
	for _, p := range []string{"/v1/sessions", "/v1/pending", "/v1/events?after=0&limit=1000"} {
		var b []byte
		e.get(p, 200, &b)
		answers = append(answers, p+" "+string(b))
	}
	live := dial(t, e.http.URL+"/v1/stream?after=0", nil)
	defer live.close()
	deadline := time.After(10 * time.Second)
stream:
	for {
		select {
		case ev, ok := <-live.ch:
			if !ok {
				break stream
			}
			answers = append(answers, "stream "+ev.data)
			if ev.id == strconv.FormatUint(last, 10) {
				break stream
			}
		case <-deadline:
			t.Errorf("stream: seq %d not seen in 10s", last)
			break stream
		}
	}

	for _, a := range answers {
		for _, s := range secrets {
			if strings.Contains(a, s.core) {
				t.Errorf("%s secret shown: %.300s", s.name, a)
			}
		}
	}
}

// TestObservations_BadTime: an "at" that is not RFC 3339 is refused
// naming the field and the format, not in Go's layout words.
func TestObservations_BadTime(t *testing.T) {
	e := newEnv(t)
	for _, at := range []string{`"notatime"`, `"2026-11-30 23:55:00"`, `12`, `{}`} {
		var ae apiError
		e.do("POST", "/v1/observations", `{"harness":"h","id":"x","session":"s","kind":"k","at":`+at+`,"signals":[{"kind":"prompt"}]}`, nil, 400, &ae)
		if ae.Code != "bad_request" || !strings.Contains(ae.Error, `field "at"`) || !strings.Contains(ae.Error, "RFC 3339") ||
			strings.Contains(ae.Error, "2006-01-02T15:04:05Z07:00") || strings.Contains(ae.Error, "parsing time") {
			t.Errorf("at %s: %+v", at, ae)
		}
		if strings.HasPrefix(at, `"`) && !strings.Contains(ae.Error, at) {
			t.Errorf("at %s: the error does not quote what was sent: %q", at, ae.Error)
		}
	}
	// The zero time would read as no "at" (dated by its receipt, the
	// posted time lost): refused, saying so, and nothing is appended.
	var ae apiError
	e.do("POST", "/v1/observations", `{"harness":"h","id":"x","session":"s","kind":"k","at":"0001-01-01T00:00:00Z","signals":[{"kind":"prompt"}]}`, nil, 400, &ae)
	if ae.Code != "bad_request" || !strings.Contains(ae.Error, `field "at": "0001-01-01T00:00:00Z" is the zero time`) {
		t.Errorf("at the zero time: %+v", ae)
	}
	if recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "h-s"}); err != nil || len(recs) != 0 {
		t.Fatalf("after the zero time: %v, %d records; want none", err, len(recs))
	}
	var rep observeReply
	e.do("POST", "/v1/observations", `{"harness":"h","id":"x","session":"s","kind":"k","at":"2026-11-30T23:55:00.5+01:00","signals":[{"kind":"prompt"}]}`, nil, 200, &rep)
	recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "h-s"})
	if err != nil || len(recs) == 0 {
		t.Fatalf("load: %v, %d records", err, len(recs))
	}
	if want := time.Date(2026, 11, 30, 22, 55, 0, 5e8, time.UTC); !recs[0].At.Equal(want) {
		t.Errorf("at: stored %v, want %v", recs[0].At, want)
	}
}

// TestReviews_RedactedReason: a person's reason is kept on the log
// redacted; a "by" that looks like a secret is refused.
func TestReviews_RedactedReason(t *testing.T) {
	e := newEnv(t)
	e.waitSeq(e.prompt(sid(1), "p1"))
	id := "toolu_push"
	verdict := e.gateReview(sid(1), id)
	aws := "AK" + "IA" + "QYLPMN5HHHFPZAM2"
	var ae apiError
	e.do("POST", "/v1/reviews/"+id, `{"session":"`+sid(1)+`","verdict":"allow","reason":"r","by":"`+aws+`"}`, nil, 400, &ae)
	if !strings.Contains(ae.Error, "by looks like a secret") || strings.Contains(ae.Error, aws) {
		t.Errorf("secret by: %+v", ae)
	}
	var rep []byte
	e.do("POST", "/v1/reviews/"+id, `{"session":"`+sid(1)+`","verdict":"allow","reason":"fine, key `+aws+`","by":"alice"}`, nil, 200, &rep)
	<-verdict
	if strings.Contains(string(rep), aws) || !strings.Contains(string(rep), "[REDACTED:") {
		t.Errorf("answer: %s", rep)
	}
	for m, err := range e.log.ReadRaw(t.Context(), "lb.>", 1) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(m.Data), aws) {
			t.Errorf("log %d %s holds the secret", m.Seq, m.Subject)
		}
	}
}
