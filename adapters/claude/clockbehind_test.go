package claude

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestWatch_ClockBehindThenImport: Watch follows a transcript whose lines
// are dated seven months back (its first line, there when the file
// appeared, history; the lines appended after it live), so the session
// learns an agent clock that far behind this host's; then an import with --skip-invalid reads on
// from there, starting at a line with no time of its own (one that does
// not parse, which the watcher stopped at, or a blank one, the watcher
// stopped before it), or at a line dated a month after the lines read
// live. No event is dated past its reading, the import's lines are
// dated in order on one clock (the line without a time of its own as the
// line before it, on the agent's clock, which the learned offset moves
// to the server's once), and the session was last heard from no later
// than the import read its last line, and no earlier than the line
// before it read live.
func TestWatch_ClockBehindThenImport(t *testing.T) {
	t.Parallel()
	const sid = "eeee5555-0000-4000-8000-000000000001"
	day := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	line := func(n int, at time.Time) []byte {
		parent, body := "null", `"type":"user","message":{"role":"user","content":"step"}`
		if n > 1 {
			parent = fmt.Sprintf(`"u%d"`, n-1)
		}
		if n%2 == 0 {
			body = `"type":"assistant","message":{"role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`
		}
		return fmt.Appendf(nil, `{%s,"uuid":"u%d","parentUuid":%s,"sessionId":%q,"timestamp":%q}`+"\n", body, n, parent, sid, at.Format(time.RFC3339Nano))
	}
	for _, first := range []string{"invalid", "blank", "a month later"} {
		t.Run(first, func(t *testing.T) {
			log := ingesttest.OpenLog(t)
			in := newTestIngester(t, log)
			base := t.TempDir()
			root, sentinel := filepath.Join(base, "projects"), filepath.Join(base, "sentinel")
			dir := filepath.Join(root, "-home-user-app")
			for _, d := range []string{dir, filepath.Join(sentinel, "-home-user-other")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, sid+".jsonl")
			// Another session's transcript, there from the start: once it
			// is in the log, Watch's first walk is done, and what is
			// written after is read live.
			const other = "5e551011-0000-4000-8000-0000000000af"
			ingesttest.AppendFile(t, filepath.Join(sentinel, "-home-user-other", other+".jsonl"),
				fmt.Appendf(nil, `{"type":"user","uuid":"o1","parentUuid":null,"sessionId":%q,"timestamp":"2026-05-01T09:00:00Z","message":{"role":"user","content":"hi"}}`+"\n", other))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- in.Watch(ctx, WatchConfig{Roots: []string{root, sentinel}, Rescan: 20 * time.Millisecond})
			}()
			ingesttest.Eventually(t, "Watch's first walk", func() bool { return ingesttest.StateOf(t, log, other).Lines == 1 })
			stop := func() {
				if cancel != nil {
					cancel()
					cancel = nil
					if err := <-done; err != nil {
						t.Errorf("watch: %v", err)
					}
				}
			}
			t.Cleanup(stop)
			// The file appears with its first line, dated more than
			// ingest.HistoryAge back: history, as a copy's would be.
			// What the agent writes after it is read live.
			ingesttest.AppendFile(t, path, line(1, day.Add(time.Second)))
			ingesttest.Eventually(t, "the first line", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 1 })
			var live []byte
			for n := 2; n <= 4; n++ {
				live = append(live, line(n, day.Add(time.Duration(n)*time.Second))...)
			}
			ingesttest.AppendFile(t, path, live)
			ingesttest.Eventually(t, "the lines read live", func() bool { return ingesttest.StateOf(t, log, sid).Lines == 4 })
			readLive := ingesttest.StateOf(t, log, sid).ObservedAt
			if st := ingesttest.StateOf(t, log, sid); st.ClockOffsetMS < 200*24*time.Hour.Milliseconds() {
				t.Fatalf("offset %d ms learned; want the agent's clock months behind", st.ClockOffsetMS)
			}

			var rest []byte
			next := day.Add(5 * time.Second)
			switch first {
			case "invalid":
				rest = []byte("not json at all\n")
			case "blank":
				stop() // a blank line the watcher would read live
				rest = []byte("\n")
			case "a month later":
				stop()
				next = next.Add(31 * 24 * time.Hour)
			}
			rest = append(append(rest, line(5, next)...), line(6, next.Add(time.Second))...)
			ingesttest.AppendFile(t, path, rest)
			imp, err := NewIngester(IngestConfig{Log: log, Host: "test", SkipInvalid: true})
			if err != nil {
				t.Fatal(err)
			}
			agg := events.Aggregate{Kind: events.KindSession, ID: sid}
			if _, err := imp.ImportFile(t.Context(), path, agg, nil); err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			stop()

			st := ingesttest.StateOf(t, log, sid)
			want := 6
			if first != "a month later" {
				want = 7
			}
			if st.Lines != want {
				t.Fatalf("%d lines in the session; want %d", st.Lines, want)
			}
			if st.ObservedAt.After(after) || st.ObservedAt.Before(readLive) {
				t.Errorf("last heard from at %s; want between the last live line's reading %s and the import's end %s", st.ObservedAt, readLive, after)
			}
			recs, _, err := log.Load(t.Context(), agg)
			if err != nil {
				t.Fatal(err)
			}
			var prev time.Time // the import's last line's time
			for _, r := range recs {
				if r.At.After(after) {
					t.Errorf("%s dated %s, past the host's clock %s", r.Type, r.At, after)
				}
				o, ok := events.Observed(r.Data)
				if !ok || o.Line == 0 {
					continue
				}
				if r.At.After(o.Received) {
					t.Errorf("line %d dated %s, past its reading %s", o.Line, r.At, o.Received)
				}
				if o.Live {
					continue
				}
				if r.At.Before(prev) {
					t.Errorf("line %d (%s) dated %s, before the line before it (%s)", o.Line, o.Kind, r.At, prev)
				}
				prev = r.At
			}
		})
	}
}
