package claude

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/events"
)

// TestWatch_FoundFileClockByModTime: transcripts already in a watched
// folder when Watch starts (serve started, or restarted, mid-session)
// are history, read at once, and each one's modification time tells when
// its last line was written by this host's clock. A session whose agent
// clock lags 40 minutes, or runs 40 minutes ahead, still being written,
// is not stale and starts now, not 40 minutes back; one whose file was
// last written two hours ago is stale at once, whichever way its agent's
// clock is off.
func TestWatch_FoundFileClockByModTime(t *testing.T) {
	t.Parallel()
	const lag = 40 * time.Minute
	line := func(sid string, n int, at time.Time) []byte {
		parent, body := "null", `"type":"user","message":{"role":"user","content":"build it"}`
		if n > 1 {
			parent = fmt.Sprintf(`"u%d"`, n-1)
			body = `"type":"assistant","message":{"role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}],"stop_reason":"tool_use"}`
		}
		return fmt.Appendf(nil, `{%s,"uuid":"u%d","parentUuid":%s,"sessionId":%q,"timestamp":%q}`+"\n", body, n, parent, sid, at.UTC().Format(time.RFC3339Nano))
	}
	log, in, root := watchRig(t)
	dir := projectDir(t, root, "-home-user-shop")
	now := time.Now()
	cases := []struct {
		sid       string
		skew      time.Duration // the agent's clock minus this host's
		untouched time.Duration // how long before now the file was last written
		stale     bool
	}{
		{"f0f0f0f0-0000-4000-8000-000000000001", -lag, 0, false},
		{"f0f0f0f0-0000-4000-8000-000000000002", lag, 0, false},
		{"f0f0f0f0-0000-4000-8000-000000000003", 0, 2 * time.Hour, true},
		{"f0f0f0f0-0000-4000-8000-000000000004", -lag, 2 * time.Hour, true},
		{"f0f0f0f0-0000-4000-8000-000000000005", lag, 2 * time.Hour, true},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.sid+".jsonl")
		wrote := now.Add(-c.untouched)
		ingesttest.AppendFile(t, path, line(c.sid, 1, wrote.Add(c.skew-time.Minute)), line(c.sid, 2, wrote.Add(c.skew)))
		if c.untouched > 0 {
			if err := os.Chtimes(path, wrote, wrote); err != nil {
				t.Fatal(err)
			}
		}
	}
	startWatch(t, in, 20*time.Millisecond, root)
	for _, c := range cases {
		ingesttest.Eventually(t, "the lines of "+c.sid, func() bool { return ingesttest.StateOf(t, log, c.sid).Lines == 2 })
	}
	// Past the quiet period after the last receipt; 90 minutes is past
	// the 40 of skew, so a file untouched for two hours is stale only if
	// dated by when it was written, not by its agent's clock (one ahead
	// would be 80 minutes old).
	at := time.Now().Add(Quiet)
	const abandonAfter = 90 * time.Minute
	for _, c := range cases {
		st := ingesttest.StateOf(t, log, c.sid)
		if st.Phase != events.PhaseWorking {
			t.Fatalf("%s: phase %s, want working", c.sid, st.Phase)
		}
		wrote := now.Add(-c.untouched).UTC().Truncate(time.Microsecond)
		if d := st.ObservedAt.Sub(wrote); d < -time.Second || d > time.Second {
			t.Errorf("%s (agent clock %v off, file written %v ago): observed_at %s, want the file's modification time %s", c.sid, c.skew, c.untouched, st.ObservedAt, wrote)
		}
		if d := st.StartedAt.Sub(wrote.Add(-time.Minute)); d < -time.Second || d > time.Second {
			t.Errorf("%s (agent clock %v off, file written %v ago): started %s, want %s on this host's clock", c.sid, c.skew, c.untouched, st.StartedAt, wrote.Add(-time.Minute))
		}
		if ok, err := in.WouldReconcile(st, at, abandonAfter, nil); ok != c.stale || err != nil {
			t.Errorf("%s (agent clock %v off, file written %v ago): WouldReconcile = %v, %v; want %v", c.sid, c.skew, c.untouched, ok, err, c.stale)
		}
	}
}
