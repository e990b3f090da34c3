// Package ingesttest holds what the tests of the ingest engine
// (adapters/ingest), the agent adapters (adapters/claude, adapters/codex)
// and the usage report (adapters/usage) share: files written and grown,
// a log on an embedded server, sessions folded from it, the shared corpus
// of recordings and the data dir's private file. Only tests import it.
//
// Every function fails the test (t.Fatal) on an error it does not
// expect, and may only be called from the test's goroutine. It imports
// no adapter but natslog, so adapters/ingest's own tests can use it.
package ingesttest

import (
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/reducertest"
	"github.com/logbook-dev/logbook/reducers/session"
)

// WriteFile writes content to path (mode 0644), making its directory
// (0755) and replacing what was there.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// AppendFile appends each of chunks (strings or byte slices) to path, in
// order, creating the file (0644) but not its directory.
func AppendFile[B ~string | ~[]byte](t testing.TB, path string, chunks ...B) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if _, err := f.Write([]byte(c)); err != nil {
			f.Close()
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Collect returns every item of seq and, apart, every error it yields,
// each in order.
func Collect[L any](seq iter.Seq2[L, error]) ([]L, []error) {
	var items []L
	var errs []error
	for l, err := range seq {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		items = append(items, l)
	}
	return items, errs
}

// OpenLog returns a log on a fresh embedded server that fsyncs every
// write, both closed when the test ends.
func OpenLog(t testing.TB) *natslog.Log {
	t.Helper()
	log, _ := natslogtest.Start(t, natslog.FsyncAlways)
	return log
}

// Session returns the aggregate of session id.
func Session(id string) events.Aggregate {
	return events.Aggregate{Kind: events.KindSession, ID: id}
}

// StateOf folds session id from l with session.Fold.
func StateOf(t testing.TB, l events.Log, id string) session.State {
	t.Helper()
	agg := Session(id)
	recs, _, err := l.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	return session.Fold(session.Init(agg), recs)
}

// ArcOf returns the phases session id went through, from l: ready for its
// start, each transition's phase, ended for its end.
func ArcOf(t testing.TB, l events.Log, id string) []string {
	t.Helper()
	recs, _, err := l.Load(t.Context(), Session(id))
	if err != nil {
		t.Fatal(err)
	}
	var arc []string
	for _, r := range recs {
		if ph, ok := reducertest.PhaseAfter(r.Data); ok {
			arc = append(arc, ph)
		}
	}
	return arc
}

// NoneLogged fails the test if l holds any event of session sid.
func NoneLogged(t testing.TB, l events.Log, sid string) {
	t.Helper()
	recs, _, err := l.Load(t.Context(), Session(sid))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 0 {
		t.Fatalf("session %s holds %d events, want none", sid, len(recs))
	}
}

// Eventually waits, polling every 10 ms, until ok holds, and fails the
// test after 20 s; what names the wait.
func Eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PrivateSession is the session of the line PrivateData keeps in the data
// dir's file.
const PrivateSession = "5e551011-0000-4000-8000-00000000c0de"

// PrivateLine is a Claude Code transcript line of session sid with uuid
// id. The data dir's files in the tests hold such lines, so that reading
// one as a transcript would append it.
func PrivateLine(sid, id string) string {
	return `{"type":"user","uuid":"` + id + `","parentUuid":null,"isSidechain":false,"sessionId":"` + sid + `","timestamp":"2026-05-01T10:00:00.000Z","message":{"role":"user","content":"hunter2"}}` + "\n"
}

// PrivateData returns a new data dir and the file creds.json in it (in a
// subfolder), which holds PrivateLine(PrivateSession, "creds-1"): a read
// of it as a transcript would import something.
func PrivateData(t testing.TB) (data, creds string) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "data")
	creds = filepath.Join(data, "sub", "creds.json")
	WriteFile(t, creds, PrivateLine(PrivateSession, "creds-1"))
	return data, creds
}

// SwapTo replaces path, atomically, with a symbolic link to target.
func SwapTo(t testing.TB, path, target string) {
	t.Helper()
	tmp := path + ".lnk"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Corpus returns the shared recordings, <module root>/../shared/corpus
// joined with sub (an agent's folder, say), or skips the test when they
// are not there: they are not part of this repository.
func Corpus(t testing.TB, sub ...string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the test directory; cannot locate the shared corpus")
		}
		dir = parent
	}
	corpus := filepath.Join(append([]string{dir, "..", "shared", "corpus"}, sub...)...)
	if _, err := os.Stat(corpus); err != nil {
		t.Skipf("shared corpus not found at %s: %v", corpus, err)
	}
	return corpus
}

// PeerGolden reads a peer's golden replay file (a recording's
// .replay.json.golden): the arc of its transitions' new states, and the
// final state of the recording's session (the session whose id is not a
// proc-<pid> pre-session), else the arc's last phase, "" if neither.
func PeerGolden(t testing.TB, path string) (arc []string, final string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Transitions []struct {
			NewState string `json:"new_state"`
		} `json:"transitions"`
		Sessions []struct {
			ID    string `json:"session_id"`
			Final string `json:"final_state"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	for _, tr := range g.Transitions {
		arc = append(arc, tr.NewState)
	}
	for _, s := range g.Sessions {
		if !strings.HasPrefix(s.ID, "proc-") {
			final = s.Final
		}
	}
	if final == "" && len(arc) > 0 {
		final = arc[len(arc)-1]
	}
	return arc, final
}

// WithinBound fails the test (t.Errorf, going on) for each of recs dated
// after bound, and for the observation of line whose AgentTime is not
// agentTime: a line dated past the clock's bound is stored at the bound
// and keeps its own timestamp as its agent time.
func WithinBound(t testing.TB, recs []events.Record, bound time.Time, line int, agentTime string) {
	t.Helper()
	for _, r := range recs {
		if r.At.After(bound) {
			t.Errorf("%s at %v, past the bound %v", r.Type, r.At, bound)
		}
		if o, ok := events.Observed(r.Data); ok && o.Line == line && o.AgentTime != agentTime {
			t.Errorf("line %d agent_time = %q; want the line's own timestamp %q", line, o.AgentTime, agentTime)
		}
	}
}
