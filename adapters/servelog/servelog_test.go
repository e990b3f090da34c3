package servelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// TestNATSErrorsAreServeLogRecords: a NATS client's asynchronous error
// (nats.go prints it raw to stderr without a handler) is one WARN record
// of serve's log, JSON under --log-format json.
func TestNATSErrorsAreServeLogRecords(t *testing.T) {
	var buf bytes.Buffer
	NATSErrors(New(&buf, "json"))(nil, nil, errors.New(`nats: permissions violation: Permissions Violation for Publish to "x"`))
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%q: %v, want one JSON record", buf.String(), err)
	}
	if rec["level"] != "WARN" || rec["component"] != "serve" || rec["err"] == nil {
		t.Errorf("got %v, want a WARN record of serve with the error", rec)
	}
}

// TestWorkerRecordsAreServeLogRecords: a worker's log/slog record in
// serve's log is one record with the worker's own level and attributes,
// not a text line wrapped as the message of another at another level.
func TestWorkerRecordsAreServeLogRecords(t *testing.T) {
	var buf bytes.Buffer
	PartLogger(New(&buf, "json"), "worker").Warn("abandoned", "command", "c1", "reason", "lost")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%q: %v, want one JSON record", buf.String(), err)
	}
	if rec["level"] != "WARN" || rec["msg"] != "abandoned" || rec["component"] != "worker" || rec["command"] != "c1" || rec["reason"] != "lost" {
		t.Errorf("got %v, want the worker's own WARN record", rec)
	}
}
