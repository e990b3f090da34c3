package events

// HarnessObserved is one observation a harness other than Claude Code
// posted to the HTTP API (POST /v1/observations, schema
// "logbook-observation/1"): the harness fills Signals itself, so the
// session reducer decides from it as from a parsed hook. Key is
// "<harness>:<the harness's own id>", which makes a repeated post a no-op
// while the session remembers the key (session.RecentKeys).
type HarnessObserved struct{ Observation }

// EventType implements Payload.
func (HarnessObserved) EventType() string { return "obs.harness" }
