package ingest_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
)

// Follow implements ingest.Follower: the toy follows its transcripts.
func (a toy) Follow(ctx context.Context, cfg ingest.FollowConfig) error {
	return a.watch(ctx, cfg.Roots[0], cfg.Report)
}

// toyDescriptor is the toy as cmd/logbook would list it: what an agent's
// package exports as its Descriptor.
func toyDescriptor() ingest.Agent {
	open := func(env ingest.Env) (toy, error) {
		eng, err := ingest.New(ingest.Config{Log: env.Log, Reg: env.Reg, Host: env.Host, Private: env.Private, Command: "logbook import toy", Actor: "toy"})
		return toy{eng}, err
	}
	looks := func(path string) (bool, string) {
		return strings.HasSuffix(path, ".toy.jsonl"), "not a toy transcript"
	}
	return ingest.Agent{
		Name: "toy", Verb: "toy", Short: "Import toy transcripts", Workers: "transcripts imported at once", File: "transcript",
		Roots: []string{".toy"}, RootsEnv: "TOY_ROOTS", PathOptional: true,
		Owns: func(dir string) bool { return filepath.Base(dir) == ".toy" },
		Import: ingest.NewImport(ingest.Format[string]{
			Noun: "transcript", What: "a toy transcript", Ext: ".jsonl", Looks: looks,
			Discover: func(paths []string) ([]string, error) {
				var out []string
				for _, p := range paths {
					m, _ := filepath.Glob(filepath.Join(p, "*.jsonl"))
					out = append(out, m...)
				}
				return out, nil
			},
			File: func(path string) (string, bool) { return path, true },
		}, func(_ context.Context, env ingest.ImportEnv) (ingest.Runner[string], func(), error) {
			a, err := open(env.Env)
			return ingest.Runner[string]{Workers: env.Workers, Import: func(ctx context.Context, path string, _ func()) ([]ingest.FileResult, error) {
				r, err := a.importFile(ctx, path)
				return []ingest.FileResult{r}, err
			}}, nil, err
		}),
		Open: func(env ingest.Env) (ingest.Follower, error) { return open(env) },
	}
}

// TestToyDescriptor takes the toy through the path a registered agent
// takes: its folder is told from another agent's (ingest.Owner), its
// default roots come from the home directory or their variable, its
// import is planned and run as `logbook import toy` runs it, and its
// ingester opened for serve --watch follows the file as it grows.
func TestToyDescriptor(t *testing.T) {
	catchAll := ingest.Agent{Name: "other", Verb: "other"}
	toyAgent := toyDescriptor()
	list := []ingest.Agent{catchAll, toyAgent}
	home := t.TempDir()
	root := filepath.Join(home, ".toy")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if a, ok := ingest.Owner(list, root); !ok || a.Name != "toy" {
		t.Errorf("owner of %s: %q, %v; want toy", root, a.Name, ok)
	}
	if a, ok := ingest.Owner(list, home); !ok || a.Name != "other" {
		t.Errorf("owner of %s: %q, %v; want the agent that takes any folder", home, a.Name, ok)
	}
	if _, ok := ingest.Owner([]ingest.Agent{toyAgent}, home); ok {
		t.Errorf("owner of %s among the toy alone: want none", home)
	}
	env := map[string]string{}
	if got := toyAgent.DefaultRoots(func(k string) string { return env[k] }, home); !slices.Equal(got, []string{root}) {
		t.Errorf("default roots %q, want %q", got, root)
	}
	env["TOY_ROOTS"] = "/a::/b"
	if got := toyAgent.DefaultRoots(func(k string) string { return env[k] }, home); !slices.Equal(got, []string{"/a", "/b"}) {
		t.Errorf("default roots with TOY_ROOTS %q, want /a and /b", got)
	}
	moved := toyAgent
	moved.Roots, moved.RootsEnv, moved.DirEnv = []string{".toy/sessions"}, "", "TOY_HOME"
	env["TOY_HOME"] = "/srv/toy"
	if got := moved.DefaultRoots(func(k string) string { return env[k] }, home); !slices.Equal(got, []string{"/srv/toy/sessions"}) {
		t.Errorf("default roots with TOY_HOME %q, want /srv/toy/sessions", got)
	}
	env["TOY_HOME"] = ""
	if got := moved.DefaultRoots(func(k string) string { return env[k] }, home); !slices.Equal(got, []string{filepath.Join(home, ".toy/sessions")}) {
		t.Errorf("default roots with TOY_HOME empty %q, want under home", got)
	}

	path := filepath.Join(root, "s2.toy.jsonl")
	first := `{"at":"2026-05-01T10:00:01Z","who":"user","said":"hello"}` + "\n"
	if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, _ := natslogtest.Start(t, natslog.FsyncAlways)
	plan, err := toyAgent.Import.Plan([]string{root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	ienv := ingest.ImportEnv{Env: ingest.Env{Log: log, Host: "test"}, Workers: 1, Warn: func(m string) { warned = append(warned, m) }}
	sum, err := plan.Run(t.Context(), ienv, nil, io.Discard)
	if err != nil || sum.Appended != 1 || len(sum.Files) != 1 || sum.Files[0].Session != "s2" || len(sum.Errors) != 0 || len(warned) != 0 {
		t.Fatalf("import: %+v, %v, warnings %q; want 1 line into s2", sum, err, warned)
	}
	if len(sum.NotTranscripts) != 1 || !strings.HasSuffix(sum.NotTranscripts[0], "notes.jsonl: not a toy transcript") {
		t.Errorf("skipped %q, want notes.jsonl", sum.NotTranscripts)
	}
	if l := sum.Line(toyAgent.Import.Noun + " file"); l != "imported 1 transcript file: 1 line appended, 0 already in the log" {
		t.Errorf("summary line %q", l)
	}
	recs, _, err := log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "s2"})
	if err != nil || len(recs) == 0 {
		t.Fatalf("session s2: %d records, %v", len(recs), err)
	}
	if o, ok := recs[0].Data.(events.AgentLineObserved); !ok || o.Meta.Agent != "toy" || o.Parser != "toy/1" {
		t.Errorf("first record %T %+v; want obs.agent.line of the toy", recs[0].Data, recs[0].Data)
	}

	f, err := toyAgent.Open(ingest.Env{Log: log, Host: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := f.Follow(ctx, ingest.FollowConfig{Roots: []string{root}, Report: func(string) {}}); err != nil {
			t.Error(err)
		}
	})
	defer func() { cancel(); wg.Wait() }()
	w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(`{"at":"2026-05-01T10:00:02Z","who":"agent","said":"hi"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	sessions := f.(toy).Sessions()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := sessions.State(t.Context(), events.Aggregate{Kind: events.KindSession, ID: "s2"})
		if err == nil && st.Cursor(path) == 2 {
			if st.Phase != events.PhaseReady || st.Agent != "toy" {
				t.Errorf("after the answer: phase %q agent %q; want ready, toy", st.Phase, st.Agent)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the follower did not import line 2: %v", err)
		}
	}
}
