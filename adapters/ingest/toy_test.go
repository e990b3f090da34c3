package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
)

// toy is a third agent, written here with nothing but this package's
// exported API, to show what an agent adapter gives the engine: its
// format. A toy transcript is <session>.toy.jsonl, one JSON object a line,
// {"at": RFC 3339 time, "who": "user"|"agent", "said": text}; a user line
// starts a turn (a prompt signal), an agent line ends it (a turn_end
// signal). Its lines are stored as events.AgentLineObserved, the line
// type of every agent without one of its own, with "toy" in Meta.Agent.
type toy struct{ *ingest.Ingester }

// toyLines is how a toy line becomes an observation.
func toyLines() ingest.LineSource {
	return ingest.LineSource{
		Parser: "toy/1",
		Wrap:   func(o events.Observation) events.Payload { return events.AgentLineObserved{Observation: o} },
		Parse: func(path string, n int, b []byte) (events.Observation, error) {
			o := events.Observation{Key: fmt.Sprintf("toy:%d", n), Parser: "toy/1", Path: path, Line: n, Kind: "invalid",
				Meta: events.Meta{Agent: "toy"}, Raw: "{}"}
			var v struct{ At, Who, Said string }
			if err := json.Unmarshal(b, &v); err != nil {
				return o, &ingest.LineError{Path: path, Line: n, Err: fmt.Errorf("%w: %v", ingest.ErrSyntax, err)}
			}
			o.Kind, o.AgentTime = v.Who, v.At
			switch v.Who {
			case "user":
				o.Signals = []events.Sig{{Kind: events.SigPrompt, ID: fmt.Sprintf("p%d", n), Text: v.Said}}
			case "agent":
				o.Signals = []events.Sig{{Kind: events.SigText, Text: v.Said}, {Kind: events.SigTurnEnd}}
			}
			return o, nil
		},
	}
}

// session is the session a toy transcript goes to: its file's name.
func (toy) session(path string) events.Aggregate {
	id := ingest.SanitizeID(strings.TrimSuffix(filepath.Base(path), ".toy.jsonl"))
	return events.Aggregate{Kind: events.KindSession, ID: id}
}

// importFile imports one toy transcript.
func (a toy) importFile(ctx context.Context, path string) (ingest.FileResult, error) {
	return a.ImportFile(ctx, path, a.session(path), toyLines(), nil)
}

// watch follows the toy transcripts under root.
func (a toy) watch(ctx context.Context, root string, report func(string)) error {
	return a.Watch(ctx, ingest.WatchConfig{
		Roots: []string{root}, Rescan: 50 * time.Millisecond, Report: report,
		Accept: func(path string) (bool, string) {
			return strings.HasSuffix(path, ".toy.jsonl"), "not a toy transcript"
		},
		Import: func(ctx context.Context, path, _ string) ([]ingest.FileResult, error) {
			r, err := a.importFile(ctx, path)
			return []ingest.FileResult{r}, err
		},
	})
}

// newToy returns the toy agent's importer on a fresh log of its own.
func newToy(t *testing.T) toy {
	t.Helper()
	log, _ := natslogtest.Start(t, natslog.FsyncAlways)
	eng, err := ingest.New(ingest.Config{Log: log, Host: "test", Command: "logbook import toy", Actor: "toy"})
	if err != nil {
		t.Fatal(err)
	}
	return toy{eng}
}

// TestToyAgent imports a toy transcript, again (nothing new), with a torn
// last line (it waits), completed (it comes), and follows it as it grows:
// the cursor, the torn-line wait, the batches and the watcher are the
// engine's, the format the toy's.
func TestToyAgent(t *testing.T) {
	a := newToy(t)
	root := t.TempDir()
	path := filepath.Join(root, "s1.toy.jsonl")
	line := func(who, said string, sec int) string {
		return fmt.Sprintf(`{"at":"2026-05-01T10:00:%02dZ","who":%q,"said":%q}`, sec, who, said)
	}
	write := func(s string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	write(line("user", "hello", 1) + "\n" + line("agent", "hi", 2) + "\n" + `{"at":"2026-05`)
	r, err := a.importFile(ctx, path)
	if err != nil || r.Appended != 2 || r.Lines != 2 || !r.Torn || r.Session != "s1" {
		t.Fatalf("first import: %+v, %v; want 2 lines appended into s1, the third torn", r, err)
	}
	if r, err := a.importFile(ctx, path); err != nil || r.Appended != 0 || r.Skipped != 2 {
		t.Fatalf("second import: %+v, %v; want nothing new", r, err)
	}
	write(`-01T10:00:03Z","who":"user","said":"more"}` + "\n")
	if r, err := a.importFile(ctx, path); err != nil || r.Appended != 1 || r.Lines != 3 || r.Torn {
		t.Fatalf("import of the completed line: %+v, %v; want it appended", r, err)
	}
	st, err := a.Sessions().State(ctx, a.session(path))
	if err != nil || st.Phase != events.PhaseWorking || st.Cursor(path) != 3 {
		t.Fatalf("session after 3 lines: phase %q, cursor %d, %v; want working at line 3", st.Phase, st.Cursor(path), err)
	}

	wctx, cancel := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		reports []string
	)
	wg.Go(func() {
		if err := a.watch(wctx, root, func(m string) { mu.Lock(); reports = append(reports, m); mu.Unlock() }); err != nil {
			t.Error(err)
		}
	})
	write(line("agent", "done", 4) + "\n")
	if err := os.WriteFile(filepath.Join(root, "notes.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Both before the watcher stops: line 4 imported and notes.jsonl
	// reported (the watcher may come to either first).
	reported := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(reports)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err = a.Sessions().State(ctx, a.session(path))
		if err == nil && st.Cursor(path) == 4 && reported() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher did not import line 4 and report notes.jsonl: cursor %d, %v; %d reports", st.Cursor(path), err, reported())
		}
	}
	cancel()
	wg.Wait()
	if st.Phase != events.PhaseReady {
		t.Errorf("session after the agent's answer: phase %q, want ready", st.Phase)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 1 || !strings.HasSuffix(reports[0], "notes.jsonl: not a toy transcript") {
		t.Errorf("reports %q, want one: notes.jsonl is not a toy transcript", reports)
	}
}

// TestToyAgent_WatchWarns: what an import warns of (here a timestamp
// past the host's clock) the watcher reports too, naming the file and
// line; a torn last line, which the next pass imports, it does not.
func TestToyAgent_WatchWarns(t *testing.T) {
	a := newToy(t)
	root := t.TempDir()
	path := filepath.Join(root, "s2.toy.jsonl")
	text := `{"at":"2026-05-01T10:00:01Z","who":"user","said":"hello"}` + "\n" +
		`{"at":"2999-01-01T00:00:00Z","who":"agent","said":"from the future"}` + "\n" + `{"at":"2026-05`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(t.Context())
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		reports []string
	)
	wg.Go(func() {
		if err := a.watch(wctx, root, func(m string) { mu.Lock(); reports = append(reports, m); mu.Unlock() }); err != nil {
			t.Error(err)
		}
	})
	want := path + ":2: timestamp 2999-01-01T00:00:00Z lies past this host's clock"
	said := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range reports {
			if strings.HasPrefix(r, want) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(20 * time.Second); !said(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("reports %q, want one starting %q", reports, want)
		}
	}
	cancel()
	wg.Wait()
	for _, r := range reports {
		if strings.Contains(r, "incomplete last line") {
			t.Errorf("report %q: a torn last line is no fault of a live transcript", r)
		}
	}
}

// A transcript rewritten under Logbook goes on, with --as-new, in session
// <id>-r1; when a session of another transcript holds that id already (a
// short id: the toy names its sessions after its files), the import is
// refused, saying so, and nothing of it goes into that session.
func TestToyAgent_AsNewTakenID(t *testing.T) {
	log, _ := natslogtest.Start(t, natslog.FsyncAlways)
	open := func(asNew bool) toy {
		eng, err := ingest.New(ingest.Config{Log: log, Host: "test", Command: "logbook import toy", Actor: "toy", AsNew: asNew})
		if err != nil {
			t.Fatal(err)
		}
		return toy{eng}
	}
	line := func(who, said string, sec int) string {
		return fmt.Sprintf(`{"at":"2026-05-01T10:00:%02dZ","who":%q,"said":%q}`+"\n", sec, who, said)
	}
	root := t.TempDir()
	a, other := filepath.Join(root, "a.toy.jsonl"), filepath.Join(root, "a-r1.toy.jsonl")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(a, line("user", "one", 1)+line("agent", "two", 2))
	write(other, line("user", "other", 1))
	plain, asNew := open(false), open(true)
	for _, p := range []string{a, other} {
		if _, err := plain.importFile(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	write(a, line("user", "ONE", 1))
	if _, err := plain.importFile(t.Context(), a); err == nil {
		t.Fatal("a rewritten transcript imported without --as-new")
	}
	r, err := asNew.importFile(t.Context(), a)
	if !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), "session a-r1, which holds another history") || r.Appended != 0 {
		t.Errorf("--as-new into a taken id: %+v, %v; want it refused, naming session a-r1", r, err)
	}
	st, err := asNew.Sessions().State(t.Context(), asNew.session(other))
	if err != nil || st.Cursor(a) != 0 || st.Cursor(other) != 1 {
		t.Errorf("session a-r1: cursor of a.toy.jsonl %d, of its own %d, %v; want 0 and 1", st.Cursor(a), st.Cursor(other), err)
	}
}
