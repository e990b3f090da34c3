package claude

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestWatch_AgentClockAheadEndsTurn: an agent whose clock runs 90 s
// ahead of this host's writes a prompt, then, while Watch follows the
// file, the assistant's end of the turn, both dated by its clock. However
// Watch found the file (in a folder that appeared after it started, there
// at its start, created while it ran, imported before it started), the
// prompt read as history is dated no later than its reading, so the end
// read live later is not taken for an earlier turn's: the session is
// ready, its turn ended, and no event of it is dated past the host's
// clock.
func TestWatch_AgentClockAheadEndsTurn(t *testing.T) {
	t.Parallel()
	const ahead = 90 * time.Second
	line := func(sid string, n int, body string) []byte {
		parent, kind := "null", "user"
		if n > 1 {
			parent, kind = fmt.Sprintf(`"u%d"`, n-1), "assistant"
		}
		at := time.Now().Add(ahead).UTC().Format("2006-01-02T15:04:05.000Z")
		return fmt.Appendf(nil, `{"type":%q,"uuid":"u%d","parentUuid":%s,"sessionId":%q,"timestamp":%q,%s}`+"\n", kind, n, parent, sid, at, body)
	}
	const prompt = `"message":{"role":"user","content":"say hello"}`
	const end = `"message":{"role":"assistant","model":"m","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn"}`
	for i, how := range []string{"awaited folder appeared", "there at the start", "created while watched", "imported before"} {
		t.Run(how, func(t *testing.T) {
			sid := fmt.Sprintf("5e551011-0000-4000-8000-0000000000a%d", i)
			log := ingesttest.OpenLog(t)
			in := newTestIngester(t, log)
			base := t.TempDir()
			root := filepath.Join(base, "projects")
			path := filepath.Join(root, "-home-user-app", sid+".jsonl")
			// Another session's transcript, there from the start: once it
			// is in the log, Watch's first walk is done.
			const other = "5e551011-0000-4000-8000-0000000000af"
			sentinel := filepath.Join(base, "sentinel")
			if err := os.MkdirAll(filepath.Join(sentinel, "-home-user-other"), 0o755); err != nil {
				t.Fatal(err)
			}
			ingesttest.AppendFile(t, filepath.Join(sentinel, "-home-user-other", other+".jsonl"), line(other, 1, prompt))
			cfg := ingest.WatchConfig{Roots: []string{root, sentinel}, Rescan: 20 * time.Millisecond}
			write := func(dir string) {
				if err := os.MkdirAll(filepath.Join(dir, "-home-user-app"), 0o755); err != nil {
					t.Fatal(err)
				}
				ingesttest.AppendFile(t, filepath.Join(dir, "-home-user-app", sid+".jsonl"), line(sid, 1, prompt))
			}
			later := func() {} // what happens once Watch runs
			switch how {
			case "awaited folder appeared":
				// The folder appears whole, the transcript in it: what it
				// holds then is history.
				cfg.Roots, cfg.Await = []string{sentinel}, []string{root}
				stage := filepath.Join(base, "stage")
				write(stage)
				later = func() {
					if err := os.Rename(stage, root); err != nil {
						t.Fatal(err)
					}
				}
			case "there at the start":
				write(root)
			case "created while watched":
				if err := os.MkdirAll(root, 0o755); err != nil {
					t.Fatal(err)
				}
				later = func() { write(root) }
			case "imported before":
				write(root)
				if _, err := in.ImportFile(t.Context(), path, events.Aggregate{Kind: events.KindSession, ID: sid}, nil); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			rep := &reports{}
			cfg.Report = rep.add
			go func() { done <- in.Watch(ctx, cfg) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("watch: %v", err)
				}
			})
			ingesttest.Eventually(t, "Watch's first walk", func() bool { return ingesttest.StateOf(t, log, other).Lines == 1 })
			later()
			ingesttest.Eventually(t, "the prompt", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 1 })
			ingesttest.AppendFile(t, path, line(sid, 2, end))
			ingesttest.Eventually(t, "the end of the turn", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 2 })
			after := time.Now()

			st := ingesttest.StateOf(t, log, sid)
			if st.Phase != events.PhaseReady || st.TurnOpen {
				t.Errorf("phase %s, activity %s, turn open %v; want ready, the turn ended (reports %q)", st.Phase, st.Activity, st.TurnOpen, rep.msgs)
			}
			recs, _, err := log.Load(t.Context(), events.Aggregate{Kind: events.KindSession, ID: sid})
			if err != nil {
				t.Fatal(err)
			}
			var last time.Time
			ended := false
			for _, r := range recs {
				if r.At.After(after) {
					t.Errorf("%s dated %s, past the host's clock %s", r.Type, r.At, after)
				}
				if r.At.Before(last) {
					t.Errorf("%s dated %s, before the event before it (%s)", r.Type, r.At, last)
				}
				last = r.At
				ended = ended || r.Type == "session.turn_ended"
			}
			if !ended {
				t.Errorf("no session.turn_ended among %d events", len(recs))
			}
		})
	}
}
