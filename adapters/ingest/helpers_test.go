package ingest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
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

// openLog returns a log on a fresh embedded server.
func openLog(t *testing.T) *natslog.Log {
	t.Helper()
	log, _ := natslogtest.Start(t, natslog.FsyncAlways)
	return log
}

// privateLine is a transcript line of session sid with uuid id: the data
// dir's files in these tests hold such lines, so that reading one as a
// transcript would append it.
func privateLine(sid, id string) string {
	return `{"type":"user","uuid":"` + id + `","parentUuid":null,"isSidechain":false,"sessionId":"` + sid + `","timestamp":"2026-05-01T10:00:00.000Z","message":{"role":"user","content":"hunter2"}}` + "\n"
}

// privateSetup returns a data dir holding creds.json (a transcript line,
// so a read of it would import something) and an Ingester that keeps out
// of it.
func privateSetup(t *testing.T) (data, creds string, in *Ingester, l events.Log) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "data")
	creds = filepath.Join(data, "sub", "creds.json")
	writeFile(t, creds, privateLine("5e551011-0000-4000-8000-00000000c0de", "creds-1"))
	l = openLog(t)
	in, err := New(Config{Log: l, Host: "test", Command: "logbook import toy", Actor: "toy", Private: []string{data}})
	if err != nil {
		t.Fatal(err)
	}
	return data, creds, in, l
}

// noneLogged fails t if the log holds anything of session sid.
func noneLogged(t *testing.T, l events.Log, sid string) {
	t.Helper()
	recs, _, err := l.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 0 {
		t.Fatalf("session %s holds %d events, want none", sid, len(recs))
	}
}

// swapTo replaces path with a symbolic link to target, atomically.
func swapTo(t *testing.T, path, target string) {
	t.Helper()
	tmp := path + ".lnk"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
