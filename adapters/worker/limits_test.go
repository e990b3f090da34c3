package worker

import (
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// Output past the cap is read and counted, not stored, and command.exited
// says so, with the limits the command ran under.
func TestWorker_OutputCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	cfg := e.workerConfig()
	cfg.MaxOutputBytes = 1000
	e.startWorker(cfg)
	st, out := e.follow(e.submit(e.request(events.ModeFullAccess, "sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x; echo done >&2")), 10*time.Second)
	if st.Status != command.StatusExited || *st.ExitCode != 0 {
		t.Fatalf("status %s exit %v", st.Status, st.ExitCode)
	}
	if st.OutputBytes != 1000 || st.OutputDropped != 4005 || out.all.Len() != 1000 {
		t.Errorf("stored %d, dropped %d, read back %d; want 1000, 4005, 1000", st.OutputBytes, st.OutputDropped, out.all.Len())
	}
	if st.Limits == "" {
		t.Error("command.exited does not say which limits held")
	}
	t.Logf("limits: %s", st.Limits)
}
