package worker

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// TestWorker_CachedStateIsTheLogs: the state a worker keeps of a command
// it started, which its later decisions on it (command.running, the
// exit) are made on without reading the command back, is the log's: the
// fold of the command's events, field for field. The workspace is named
// through a symbolic link, so the path the worker runs it in (resolved)
// is not the one the log holds.
func TestWorker_CachedStateIsTheLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	link := filepath.Join(t.TempDir(), "ws-link")
	if err := os.Symlink(e.ws, link); err != nil {
		t.Fatal(err)
	}
	w, _ := e.startWorker(e.workerConfig())
	req := e.request(events.ModeFullAccess, "sleep", uniqueSleep(t))
	req.Workspace = link
	id := e.submit(req)
	agg := events.Aggregate{Kind: events.KindCommand, ID: id}
	e.waitFor("command.running", func() bool {
		st, err := e.client.Command(t.Context(), id)
		return err == nil && (st.ProcStart != 0 || st.Ended())
	})
	cached, err := w.cmds.State(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := e.log.Load(t.Context(), agg)
	if err != nil {
		t.Fatal(err)
	}
	logged := command.Fold(command.Init(agg), recs)
	if logged.Status != command.StatusStarted {
		t.Fatalf("command %s: %s on the log, want started (running)", id, logged.Status)
	}
	if logged.Workspace != link {
		t.Fatalf("the log holds workspace %q, want %q as requested", logged.Workspace, link)
	}
	if d := cmp.Diff(logged, cached); d != "" {
		t.Errorf("the worker's state of the command differs from the log's (-log +worker):\n%s", d)
	}
	if err := e.client.Stop(t.Context(), id, "test", "test"); err != nil {
		t.Fatal(err)
	}
	e.follow(id, 20*time.Second)
}
