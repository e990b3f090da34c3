package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/cmd/logbook/internal/bench"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/session"
)

// apiServe runs `logbook serve` (no workers, no reconciler, fsync
// interval) on a data dir of its own until the test ends, and returns the
// data dir, a backend connected to it as other commands connect, and
// serve's log. The reconciler would rightly mark the generated working
// sessions, which no agent observes, and change the answers.
func apiServe(t *testing.T) (string, *backend, *syncBuffer) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	b, stderr := serveAt(t, data)
	return data, b, stderr
}

// serveAt is apiServe on data dir data.
func serveAt(t *testing.T, data string) (*backend, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runCLI(ctx, []string{"--data", data, "serve", "--workers", "0", "--reconcile-every", "0", "--fsync", "interval"}, bytes.NewReader(nil), io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", stderr.String())
		}
		if _, err := os.Stat(filepath.Join(data, "serve.json")); err != nil {
			continue
		}
		b, err := openBackend(t.Context(), &globals{data: data, cmdName: "test"})
		if err != nil {
			continue
		}
		if !b.remote {
			b.Close()
			continue
		}
		t.Cleanup(func() { b.Close() })
		return b, &stderr
	}
}

// cli runs logbook with args on data and returns its standard output.
func cli(t *testing.T, data string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := runCLIAgain(t.Context(), append([]string{"--data", data}, args...), &out, &errb); err != nil {
		t.Fatalf("logbook %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// rows counts the lines of out that begin with prefix.
func rows(out, prefix string) int {
	n := 0
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}

// TestAPI_LargeAnswers asks every verb of the API, through the command
// line and a running server, for an answer well over the connection's
// maximum payload (1 MiB): lists come page after page and print whole,
// single objects come in parts; the server logs nothing.
func TestAPI_LargeAnswers(t *testing.T) {
	t.Parallel()
	data, b, serveLog := apiServe(t)
	ctx := t.Context()
	h := bench.NewScaleHistory(b.reg)
	start := time.Now()
	const (
		sessions = 2500 // ~600 bytes each: ~1.5 MiB
		working  = 10
		children = 1500 // of parent, ~1 KiB each: ~1.5 MiB
		commands = 500  // of parent, ~3 KiB each: ~1.5 MiB
	)
	parent := bench.ScaleSessionID(0)
	batches := h.Sessions(1, sessions, working)
	batches = append(batches, h.Session(parent, "", events.PhaseReady, 10))
	for i := range children {
		batches = append(batches, h.Session(fmt.Sprintf("5ca1ec41-0000-4000-8000-%012d", i), parent, events.PhaseEnded, 800))
	}
	for i := range commands {
		batches = append(batches, h.Command(fmt.Sprintf("cmd-%04d", i), parent, 3000))
	}
	huge := h.Command("cmd-huge", parent, 1_000_000) // one event as large as the log takes
	batches = append(batches, huge)
	// 64 appends in flight: enough for the group commit, and each waits
	// behind few enough that it ends within its timeout on a loaded
	// machine (256 at a time timed out there).
	if err := bench.AppendBatches(ctx, b.log, batches, map[events.Aggregate]uint64{}, 64); err != nil {
		t.Fatal(err)
	}
	t.Logf("history written in %s", time.Since(start))
	total := sessions + 1 + children

	t.Run("sessions", func(t *testing.T) {
		out := cli(t, data, "sessions", "--all")
		if got := rows(out, "5ca1e"); got != total {
			t.Errorf("sessions printed %d rows, want %d", got, total)
		}
		js := cli(t, data, "sessions", "--all", "--json")
		if len(js) < 2<<20 {
			t.Errorf("sessions --json printed %d bytes; the test wants over 2 MiB", len(js))
		}
		var ss []session.State
		if err := json.Unmarshal([]byte(js), &ss); err != nil || len(ss) != total {
			t.Errorf("sessions --json: %d sessions (%v), want %d", len(ss), err, total)
		}
		for i := 1; i < len(ss); i++ {
			if ss[i-1].UpdatedAt.Before(ss[i].UpdatedAt) {
				t.Fatalf("sessions --json not the most recently active first at %d: %s then %s", i, ss[i-1].ID, ss[i].ID)
			}
		}
		if got := rows(cli(t, data, "sessions", "--limit", "7"), "5ca1e"); got != 7 {
			t.Errorf("sessions --limit 7 printed %d rows", got)
		}
		if got := rows(cli(t, data, "sessions", "--all", "--phase", "working"), "5ca1e"); got != working {
			t.Errorf("sessions --phase working printed %d rows, want %d", got, working)
		}
		if got := rows(cli(t, data, "sessions", "--phase", "ended", "--limit", "2000"), "5ca1e"); got != 2000 {
			t.Errorf("sessions --phase ended --limit 2000 printed %d rows", got)
		}
	})
	t.Run("session", func(t *testing.T) {
		var r api.SessionReply
		if err := json.Unmarshal([]byte(cli(t, data, "session", "show", parent, "--json")), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Children) != children || len(r.Commands) != commands+1 {
			t.Errorf("session show: %d children, %d commands; want %d, %d", len(r.Children), len(r.Commands), children, commands+1)
		}
	})
	t.Run("commands", func(t *testing.T) {
		out := cli(t, data, "commands")
		if got := rows(out, "cmd-"); got != commands+1 {
			t.Errorf("commands printed %d rows, want %d", got, commands+1)
		}
		var cs []command.State
		if err := json.Unmarshal([]byte(cli(t, data, "commands", "--session", parent, "--json")), &cs); err != nil || len(cs) != commands+1 {
			t.Fatalf("commands --json: %d commands (%v), want %d", len(cs), err, commands+1)
		}
		if n := len(cs[len(cs)-1].Argv[1]) + len(cs[0].Argv[1])*commands; n < 2<<20 {
			t.Errorf("commands --json carried %d bytes of argv; the test wants over 2 MiB", n)
		}
	})
	t.Run("command", func(t *testing.T) {
		var st command.State
		if err := api.Call(ctx, b.nc, b.api, api.VerbCommand, api.CommandRequest{ID: "cmd-huge"}, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Argv) != 2 || len(st.Argv[1]) != 1_000_000 {
			t.Errorf("command: argv of %d elements", len(st.Argv))
		}
	})
	t.Run("verify", func(t *testing.T) {
		if out := cli(t, data, "replay", "--verify"); !strings.Contains(out, "equal") {
			t.Errorf("replay --verify:\n%s", out)
		}
	})
	t.Run("status", func(t *testing.T) {
		var st api.StatusReply
		if err := api.Call(ctx, b.nc, b.api, api.VerbStatus, struct{}{}, &st); err != nil || st.LastSeq == 0 {
			t.Errorf("status: %+v, %v", st, err)
		}
	})
	for line := range strings.Lines(serveLog.String()) {
		if strings.Contains(line, "api ") {
			t.Errorf("serve logged: %s", line)
		}
	}
}
