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

// TestLevels: a line's level marker wins over its words (an
// informational line naming a rule "command_failed" or a folder
// "errors" stays INFO); unmarked lines keep the word rule.
func TestLevels(t *testing.T) {
	for _, tc := range []struct{ line, level, msg string }{
		{"logbook serve: INFO: notifications: rules command_failed → failing; sinks failing (webhook json) (/tmp/errors/notify.toml)", "INFO",
			"notifications: rules command_failed → failing; sinks failing (webhook json) (/tmp/errors/notify.toml)"},
		{"logbook serve: INFO: watch: /home/ana/.codex/sessions appeared: following the transcripts under it", "INFO",
			"watch: /home/ana/.codex/sessions appeared: following the transcripts under it"},
		{"logbook serve: INFO: data /tmp/TestLostErrors/data", "INFO", "data /tmp/TestLostErrors/data"},
		{"logbook serve: WARN: notifications: sink tab (board) cannot deliver", "WARN", "notifications: sink tab (board) cannot deliver"},
		{"logbook serve: ERROR: notify.toml:3:1: bad", "ERROR", "notify.toml:3:1: bad"},
		{"logbook serve: watch: x.jsonl: not a regular file", "WARN", "watch: x.jsonl: not a regular file"},
		{"logbook serve: notifications: POST failed", "WARN", "notifications: POST failed"},
		{"logbook serve: stopped", "INFO", "stopped"},
	} {
		var buf bytes.Buffer
		New(&buf, "json").Write([]byte(tc.line + "\n"))
		var rec map[string]any
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatalf("%q: %v", buf.String(), err)
		}
		if rec["level"] != tc.level || rec["msg"] != tc.msg {
			t.Errorf("%q: logged %s %q, want %s %q", tc.line, rec["level"], rec["msg"], tc.level, tc.msg)
		}
	}
}

// TestSay_OneRecord: a line said with Say is one record however many
// newlines its words hold (a data dir or a transcript named with one),
// so that a name cannot start a record that passes for serve's own.
func TestSay_OneRecord(t *testing.T) {
	line := "logbook serve: INFO: data /tmp/dd ü\nERROR: forged\n"
	var text bytes.Buffer
	Say(New(&text, "text"), line)
	if n := bytes.Count(text.Bytes(), []byte("\n")); n != 1 || !bytes.Contains(text.Bytes(), []byte(`level=INFO msg="data /tmp/dd ü\nERROR: forged"`)) {
		t.Errorf("text: %q, want one INFO record with the newline escaped in its message", text.String())
	}
	var js bytes.Buffer
	Say(New(&js, "json"), line)
	var rec map[string]any
	if err := json.Unmarshal(js.Bytes(), &rec); err != nil {
		t.Fatalf("json: %q: %v, want one record", js.String(), err)
	}
	if rec["level"] != "INFO" || rec["msg"] != "data /tmp/dd ü\nERROR: forged" {
		t.Errorf("json: %v, want one INFO record with the whole message", rec)
	}
	var plain bytes.Buffer
	Say(&plain, "logbook serve: stopped")
	if plain.String() != "logbook serve: stopped\n" {
		t.Errorf("on a plain writer: %q, want the line and a newline", plain.String())
	}
}

// TestSayPart: a part's line takes the level its marker gives, the part
// named after it, whatever the names it quotes read: a fault without a
// failure word is WARN, news naming "failed" is INFO.
func TestSayPart(t *testing.T) {
	for _, tc := range []struct{ msg, level, want string }{
		{"WARN: check runs: hooks taken on the socket are not all in the log yet (3 left): write /data/x: no space left on device", "WARN",
			"reconciler: check runs: hooks taken on the socket are not all in the log yet (3 left): write /data/x: no space left on device"},
		{"INFO: recovered 2 workspaces under /srv/error failed", "INFO", "reconciler: recovered 2 workspaces under /srv/error failed"},
		{"ERROR: x", "ERROR", "reconciler: x"},
		{"cannot decide", "WARN", "reconciler: cannot decide"}, // unmarked: its words decide
	} {
		var buf bytes.Buffer
		SayPart(New(&buf, "json"), "reconciler", tc.msg)
		var rec map[string]any
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatalf("%q: %v", buf.String(), err)
		}
		if rec["level"] != tc.level || rec["msg"] != tc.want {
			t.Errorf("%q: logged %s %q, want %s %q", tc.msg, rec["level"], rec["msg"], tc.level, tc.want)
		}
	}
	var plain bytes.Buffer
	SayPart(&plain, "workspaces", "WARN: x")
	if plain.String() != "logbook serve: WARN: workspaces: x\n" {
		t.Errorf("on a plain writer: %q", plain.String())
	}
}
