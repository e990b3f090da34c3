package ingest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// toyLines is the line format of these tests: one JSON object per line
// with "type", "uuid", "sessionId" and "timestamp" members, read into an
// observation with no signals, stored as a Codex line observation (the
// engine stores what Wrap gives it, whatever the agent).
func toyLines() LineSource {
	return LineSource{
		Parser: "toy/1",
		Wrap:   func(o events.Observation) events.Payload { return events.CodexLineObserved{Observation: o} },
		Parse: func(path string, n int, b []byte) (events.Observation, error) {
			o := events.Observation{Key: fmt.Sprintf("line:%d", n), Parser: "toy/1", Path: path, Line: n, Kind: "invalid",
				Meta: events.Meta{Agent: "toy"}, Raw: "{}"}
			var v struct {
				Type, UUID, SessionID, Timestamp string
			}
			if err := json.Unmarshal(b, &v); err != nil {
				return o, &LineError{Path: path, Line: n, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
			}
			o.Kind, o.UUID, o.AgentTime, o.Meta.SessionID = v.Type, v.UUID, v.Timestamp, v.SessionID
			return o, nil
		},
	}
}

// privateSetup returns a data dir holding creds.json (a transcript line,
// so a read of it would import something) and an Ingester that keeps out
// of it.
func privateSetup(t *testing.T) (data, creds string, in *Ingester, l events.Log) {
	t.Helper()
	data, creds = ingesttest.PrivateData(t)
	l = ingesttest.OpenLog(t)
	in, err := New(Config{Log: l, Host: "test", Command: "logbook import toy", Actor: "toy", Private: []string{data}})
	if err != nil {
		t.Fatal(err)
	}
	return data, creds, in, l
}
