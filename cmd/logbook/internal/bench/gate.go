package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/events"
)

// gatePolicy is the policy the gate rows' serve decides by.
const gatePolicy = "allow = [\"Bash(go test:*)\"]\n"

// gateRows are the gate's rows: a PreToolUse a policy rule allows, hook
// in and answer out, through the API (what the hook process waits for)
// and through a `logbook hook claude --gate` process.
func (e *benchEnv) gateRows() []benchWorkload {
	publish := []benchBaseline{
		{name: "hook verb, record only (no gate), API round trip", run: e.gateRecordOnly},
		{name: "one JetStream publish, fsync always", run: e.gatePublishRaw},
	}
	return []benchWorkload{
		{
			group: "hook", name: "gate: PreToolUse allowed by a policy rule, API round trip (hook in, answer out)", unit: "hook",
			logbook: e.gateAPIRun, baselines: publish, check: gateCheck,
		},
		{
			group: "hook", name: "gate: logbook hook claude --gate process, allowed by a policy rule", unit: "hook",
			logbook: e.gateProcessRun, baselines: []benchBaseline{{name: "logbook version (process start)", run: e.versionRun}},
		},
	}
}

// gateCheck holds a rule-decided gate round trip to p50 ≤ 20 ms.
func gateCheck(f Figures) *Check {
	c := &Check{Text: "p50 ≤20ms"}
	c.OK = f.P50ms != nil && *f.P50ms <= 20
	return c
}

// gateServe returns the serve the rows use, with the gate's policy in
// its data dir.
func (e *benchEnv) gateServe(ctx context.Context) (*benchServe, error) {
	s, err := e.serve(ctx)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.data, gate.PolicyFile), []byte(gatePolicy), 0o600); err != nil {
		return nil, err
	}
	return s, nil
}

func gatePayload(run int64, i int) []byte {
	return fmt.Appendf(nil, `{"session_id":"bench-gate-%d","transcript_path":"/home/user/.claude/projects/p/bench-gate-%d.jsonl","cwd":"/home/user/project","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_gate_%d_%d"}`,
		i%8, i%8, run, i)
}

// gateAPIRun sends cfg.Hooks PreToolUse payloads, one after another, to
// the gate verb and times each until its verdict (an allow) is back.
func (e *benchEnv) gateAPIRun(ctx context.Context) (benchSample, error) {
	s, err := e.gateServe(ctx)
	if err != nil {
		return benchSample{}, err
	}
	run := e.runs.Add(1)
	lat := make([]time.Duration, 0, e.cfg.Hooks)
	start := time.Now()
	for i := range e.cfg.Hooks {
		t := time.Now()
		var v gate.Verdict
		req := gate.HookGateRequest{ID: ulid.Make().String(), Text: string(gatePayload(run, i))}
		if err := api.Call(ctx, s.nc, api.AnyPrefix, gate.VerbGate, req, &v); err != nil {
			return benchSample{}, err
		}
		if v.Decision != gate.DecideAllow {
			return benchSample{}, fmt.Errorf("gate answered %+v, want an allow by rule", v)
		}
		lat = append(lat, time.Since(t))
	}
	return benchSample{ops: e.cfg.Hooks, elapsed: time.Since(start), lat: lat}, nil
}

// gateProcessRun starts `logbook hook claude --gate` once per payload.
func (e *benchEnv) gateProcessRun(ctx context.Context) (benchSample, error) {
	s, err := e.gateServe(ctx)
	if err != nil {
		return benchSample{}, err
	}
	run := e.runs.Add(1)
	return e.processes(ctx, s, []string{"hook", "claude", "--gate"}, func(i int) []byte { return gatePayload(run, i) })
}

// gatePublishRaw publishes one stored event per op, one after another:
// the least a verdict's append costs.
func (e *benchEnv) gatePublishRaw(ctx context.Context) (benchSample, error) {
	s, err := e.serve(ctx)
	if err != nil {
		return benchSample{}, err
	}
	run := e.runs.Add(1)
	body := e.body()
	subject := fmt.Sprintf("%s.bench-gate-%d", events.SubjectOutput, run)
	lat := make([]time.Duration, 0, e.cfg.Hooks)
	start := time.Now()
	for range e.cfg.Hooks {
		t := time.Now()
		if err := benchPublish(ctx, s.js, subject, [][]byte{body}); err != nil {
			return benchSample{}, err
		}
		lat = append(lat, time.Since(t))
	}
	return benchSample{ops: e.cfg.Hooks, elapsed: time.Since(start), lat: lat}, nil
}

// gateRecordOnly sends the same payloads to the hook verb, which records
// them and decides nothing: what the gate adds is the difference.
func (e *benchEnv) gateRecordOnly(ctx context.Context) (benchSample, error) {
	s, err := e.gateServe(ctx)
	if err != nil {
		return benchSample{}, err
	}
	run := e.runs.Add(1)
	lat := make([]time.Duration, 0, e.cfg.Hooks)
	start := time.Now()
	for i := range e.cfg.Hooks {
		t := time.Now()
		req := api.HookRequest{ID: ulid.Make().String(), Text: string(gatePayload(run, i))}
		if err := api.Call(ctx, s.nc, api.AnyPrefix, api.VerbHook, req, &api.HookReply{}); err != nil {
			return benchSample{}, err
		}
		lat = append(lat, time.Since(t))
	}
	return benchSample{ops: e.cfg.Hooks, elapsed: time.Since(start), lat: lat}, nil
}
