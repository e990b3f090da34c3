package events

import (
	"testing"
	"time"
)

// TestObserved_ByValueIsTheOwnNotACopy: for every observation payload,
// held by value (as the decoder makes them) or by pointer, Observed
// returns its observation, the payload's own without a copy, and
// allocates nothing; other payloads are not observations.
func TestObserved_ByValueIsTheOwnNotACopy(t *testing.T) {
	o := Observation{Key: "k", Parser: "p/1", Path: "/t.jsonl", Line: 7, Kind: "user", Raw: "hi",
		Signals: []Sig{{Kind: SigPrompt, Text: "hi"}}, Received: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name       string
		val, point Payload
	}{
		{"claude line", ClaudeLineObserved{o}, &ClaudeLineObserved{o}},
		{"claude hook", ClaudeHookObserved{o}, &ClaudeHookObserved{o}},
		{"codex line", CodexLineObserved{o}, &CodexLineObserved{o}},
		{"codex notify", CodexNotifyObserved{o}, &CodexNotifyObserved{o}},
		{"agent line", AgentLineObserved{o}, &AgentLineObserved{o}},
		{"tick", TickObserved{o}, &TickObserved{o}},
		{"harness", HarnessObserved{o}, &HarnessObserved{o}},
		{"otel", OTelObserved{o}, &OTelObserved{o}},
	} {
		for _, p := range []Payload{tc.val, tc.point} {
			got, ok := Observed(p)
			if !ok || got.Key != o.Key || got.Line != o.Line || got.Raw != o.Raw || len(got.Signals) != 1 || !got.Received.Equal(o.Received) {
				t.Fatalf("%s (%T): Observed = %+v, %v; want %+v", tc.name, p, got, ok, o)
			}
			if again, _ := Observed(p); again != got {
				t.Errorf("%s (%T): two calls gave two observations (%p, %p): a copy, not the payload's own", tc.name, p, got, again)
			}
			if n := testing.AllocsPerRun(100, func() { Observed(p) }); n != 0 {
				t.Errorf("%s (%T): Observed allocates %v times, want 0", tc.name, p, n)
			}
		}
	}
	if got, ok := Observed(SessionActivityChanged{From: "a", To: "b"}); ok || got != nil {
		t.Errorf("Observed(SessionActivityChanged) = %v, %v; want nil, false", got, ok)
	}
}
