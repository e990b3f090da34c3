package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude"
)

// TestHook_BehindSpool: with payloads of a session waiting in the spool
// (here held back by a drain that holds the spool's lock), a hook neither
// overtakes them nor delivers them itself: it spools its own payload
// behind them and exits 0 at once. Once the drain lets go, the server
// delivers all of them in order. With the spool empty, the next hook goes
// straight to the server and the spool stays empty.
func TestHook_BehindSpool(t *testing.T) {
	t.Parallel()
	data, b, _ := apiServe(t)
	ctx := t.Context()
	sp := openSpool(t, data)
	const sid = "5e551011-0000-4000-8000-0000000be41d"
	prompt := func(i int) string {
		return fmt.Sprintf(`{"session_id":%q,"hook_event_name":"UserPromptSubmit","prompt_id":"p-%02d","prompt":"prompt %02d"}`, sid, i, i)
	}
	hook := func(i int) {
		t.Helper()
		var errb bytes.Buffer
		if err := runCLI(ctx, []string{"--data", data, "hook", "claude"}, strings.NewReader(prompt(i)), io.Discard, &errb); err != nil {
			t.Fatalf("hook %d: %v\n%s", i, err, errb.String())
		}
	}
	lock, err := sp.Lock()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		spoolPut(t, sp, prompt(i))
	}
	for i := 3; i < 6; i++ {
		hook(i)
	}
	if left, err := sp.Pending(); err != nil || len(left) != 6 {
		t.Fatalf("spool holds %d entries (%v), want the 3 waiting and the 3 hooks behind them", len(left), err)
	}
	agg, _ := claude.SessionAggregate(sid, "")
	if recs, _, err := b.log.Load(ctx, agg); err == nil && len(recs) > 0 {
		t.Fatalf("%d events in the log while the spool was held: a hook delivered past the spool", len(recs))
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left, err := sp.Pending()
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries still spooled after 30s", len(left))
		}
	}
	hook(6)
	if ents, _ := os.ReadDir(sp.Dir()); len(ents) > 1 { // .lock
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("spool holds %v after a hook with the spool empty, want nothing spooled", names)
	}
	got := signalIDs(observations(t, ctx, b, sid))
	want := []string{"p-00", "p-01", "p-02", "p-03", "p-04", "p-05", "p-06"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("observations %v, want %v in order", got, want)
	}
}
