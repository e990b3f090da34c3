package otel_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// TestReceiver_SubagentUsageOnce: a Claude subagent's api_request event
// names its parent's session.id (query_source "subagent", agent.name its
// type [MON]), while its transcript, imported too, is a session of its
// own (agent-<agentId>) with the same request id: the project's usage
// counts that request once, in either order, and the parent's own
// requests once.
func TestReceiver_SubagentUsageOnce(t *testing.T) {
	t.Parallel() // its own log and receiver
	f := loadFixture(t)
	l, _, url := newReceiver(t)
	in, err := claude.NewIngester(claude.IngestConfig{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := os.ReadFile(filepath.Join("testdata", "claude-code-hooks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	transcript, err := os.ReadFile(filepath.Join("testdata", "claude-code-transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The subagent's transcript (subagents/agent-<agentId>.jsonl beside
	// the parent's): its lines carry the parent's sessionId, its agentId
	// and the request's id, as Claude Code 2.1.119 writes them.
	const sub = `{"parentUuid":null,"isSidechain":true,"agentId":"a5ab0001","type":"user","message":{"role":"user","content":"List the test files."},"uuid":"00000000-0000-4000-8000-0000000005a1","timestamp":"2026-11-30T10:00:03.500Z","userType":"external","entrypoint":"cli","cwd":"/home/user/project","sessionId":"SID","version":"2.1.214","gitBranch":"main"}
{"parentUuid":"00000000-0000-4000-8000-0000000005a1","isSidechain":true,"agentId":"a5ab0001","type":"assistant","uuid":"00000000-0000-4000-8000-0000000005a2","timestamp":"2026-11-30T10:00:04.000Z","requestId":"req_S1","message":{"model":"claude-haiku-4-5","id":"msg_S1","type":"message","role":"assistant","content":[{"type":"text","text":"a_test.go"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":20,"cache_read_input_tokens":0,"cache_creation_input_tokens":1000}},"userType":"external","entrypoint":"cli","cwd":"/home/user/project","sessionId":"SID","version":"2.1.214","gitBranch":"main"}
`
	// subagentRequest is the subagent's api_request event, on the parent's
	// session.
	subagentRequest := func(id string) {
		t.Helper()
		ld := logsOf(f, id)
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		lrs.RemoveIf(func(lr plog.LogRecord) bool { return lr.Body().Str() != "claude_code.api_request" })
		lrs.RemoveIf(func(lr plog.LogRecord) bool { v, _ := lr.Attributes().Get("request_id"); return v.Str() != "req_A1" })
		lr := lrs.At(0)
		for k, v := range map[string]string{"request_id": "req_S1", "model": "claude-haiku-4-5", "query_source": "subagent", "agent.name": "Explore"} {
			lr.Attributes().PutStr(k, v)
		}
		for k, v := range map[string]int64{"input_tokens": 3, "output_tokens": 20, "cache_read_tokens": 0, "cache_creation_tokens": 1000} {
			lr.Attributes().PutInt(k, v)
		}
		if resp := post(t, url+"/v1/logs", "application/x-protobuf", "", mustProto(t, ld)); resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
	}
	parent := func(id string) {
		t.Helper()
		at := time.Date(2026, 11, 30, 10, 0, 1, 0, time.UTC)
		for line := range bytes.Lines(hooks) {
			p := bytes.ReplaceAll(bytes.TrimSpace(line), []byte(f.Session), []byte(id))
			if _, err := in.Hook(t.Context(), claude.Entry{ID: ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()).String(), Time: at, Payload: p}); err != nil {
				t.Fatal(err)
			}
			at = at.Add(2 * time.Second)
		}
		path := filepath.Join(t.TempDir(), id+".jsonl")
		if err := os.WriteFile(path, bytes.ReplaceAll(transcript, []byte(f.Session), []byte(id)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := in.ImportFile(t.Context(), path, events.Aggregate{Kind: events.KindSession, ID: id}, nil); err != nil {
			t.Fatal(err)
		}
		sendSDK(t, url, f, id, nil)
	}
	subagent := func(id string) events.Aggregate {
		t.Helper()
		agg, err := hookspool.SessionAggregate(id, "a5ab0001-"+id[len(id)-2:])
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "agent.jsonl")
		b := bytes.ReplaceAll([]byte(sub), []byte("SID"), []byte(id))
		b = bytes.ReplaceAll(b, []byte(`"agentId":"a5ab0001"`), []byte(`"agentId":"a5ab0001-`+id[len(id)-2:]+`"`))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := in.ImportFile(t.Context(), path, agg, nil); err != nil {
			t.Fatal(err)
		}
		return agg
	}
	const (
		telemetryFirst  = "5e551011-0000-4000-8000-0000000000d1"
		transcriptFirst = "5e551011-0000-4000-8000-0000000000d2"
	)
	for _, id := range []string{telemetryFirst, transcriptFirst} {
		var agg events.Aggregate
		parent(id)
		if id == telemetryFirst {
			subagentRequest(id)
			agg = subagent(id)
		} else {
			agg = subagent(id)
			subagentRequest(id)
		}
		var states []session.State
		for _, a := range []events.Aggregate{{Kind: events.KindSession, ID: id}, agg} {
			recs, _, err := l.Load(t.Context(), a)
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, session.Fold(session.Init(a), recs))
		}
		lines, err := usage.Group(states, usage.Query{By: usage.ByProject})
		if err != nil {
			t.Fatal(err)
		}
		var tok usage.Tokens
		for _, ln := range lines {
			tok = tok.Plus(ln.Tokens)
		}
		// The parent's two requests (17 in, 100 out, 650 read, 50
		// written) and the subagent's one (3, 20, 0, 1000).
		if want := (usage.Tokens{Input: 20, Output: 120, CacheRead: 650, CacheWrite: 1050, Calls: 3}); tok != want {
			t.Errorf("%s: the project's usage %+v, want %+v", id, tok, want)
		}
	}
}
