package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// TestWorkerKey_EndsNoSession: what a worker host holds (the worker's
// credentials and keys/worker.key) signs a session.ended caused by a
// command that is not there, published straight to the stream. The
// origin and a follower pinned to its admin key leave it out as out of
// the worker's role (the session stays where it was), replay --verify
// names it and nothing else: the events a `logbook worker` process
// appended for the commands it ran, before the forgery and after it, are
// all attested.
func TestWorkerKey_EndsNoSession(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("commands need bubblewrap")
	}
	t.Parallel() // its own data dirs, processes and ports: beside the other slow tests
	data, follower, ws := t.TempDir(), t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // a hang guard
	defer cancel()
	logs := serveInProcess(t, data, "--workers", "0", "--reconcile-every", "0", "--http", "off")
	sctx, stop := context.WithCancel(ctx)
	// run runs the CLI until the test ends; the func it returns stops it
	// sooner and waits for it.
	run := func(data string, args ...string) func() {
		rctx, rstop := context.WithCancel(sctx)
		done := make(chan error, 1)
		go func() {
			done <- runCLI(rctx, append([]string{"--data", data}, args...), strings.NewReader(""), logs, logs)
		}()
		var once sync.Once
		end := func() {
			once.Do(func() {
				rstop()
				if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("logbook %s: %v\n%s", args[0], err, logs.String())
				}
			})
		}
		t.Cleanup(func() { stop(); end() })
		return end
	}
	run(data, "worker", "--grace", "300ms")
	const sid = "0c7e4a11-0000-4000-8000-0000000c0de5"
	promptSession(t, ctx, data, sid, ws)
	execTrue := func() {
		t.Helper()
		var out syncBuffer
		if err := runCLI(ctx, []string{"--data", data, "exec", "--session", sid, "--workspace", ws, "--", "true"}, strings.NewReader(""), &out, &out); err != nil {
			t.Fatalf("exec true: %v\n%s\n%s", err, out.String(), logs.String())
		}
	}
	dd := dataDir(data)
	l, wnc := connectAs(t, dd, natslog.RoleWorker)
	agg := events.Aggregate{Kind: events.KindSession, ID: sid}
	// closed waits for the session's entry of the nth command to close:
	// exec returns at command.exited, and the session's entry_closed
	// follows it, appended on its own.
	closed := func(n int) ([]events.Record, uint64) {
		t.Helper()
		for {
			recs, last, err := l.Load(ctx, agg)
			if err != nil {
				t.Fatalf("load %s: %v", agg, err)
			}
			c := 0
			for _, r := range recs {
				if r.Type == "session.entry_closed" {
					c++
				}
			}
			if c >= n {
				return recs, last
			}
			if ctx.Err() != nil {
				t.Fatalf("the entry of command %d did not close: %d events on %s", n, len(recs), agg)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	execTrue()
	recs, last := closed(1)
	wkey, err := dd.principalKey("worker.key", attestation.RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	e := newEvent(agg, recs[len(recs)-1].Ver+1, time.Time{}, "worker", "command.exited",
		events.SessionEnded{From: events.PhaseWorking, Reason: "prompt_input_exit", Evidence: "the user closed the session"})
	m := eventMsg(t, e, last)
	m.Header.Set(natslog.HeaderType, e.Type)
	id, sig := wkey.Sign(m.Subject, m.Header.Get(jetstream.ExpectedLastSubjSeqHeader), m.Data)
	m.Header.Set(attestation.HeaderKey, id)
	m.Header.Set(attestation.HeaderSig, sig)
	forged := publish(t, wnc, m).Sequence

	execTrue() // the worker's events after the forgery
	closed(2)
	end, err := l.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := verifyNames(t, data, fmt.Sprintf("seq %d session.ended", forged), fmt.Sprintf("live projection at seq %d:", end))
	if n := strings.Count(out, "UNATTESTED:"); n != 1 || !strings.Contains(out, string(attestation.OutOfRole)) {
		t.Errorf("replay --verify names %d unattested events; want the forgery alone, out of role:\n%s", n, out)
	}
	if show := cli(t, data, "session", "show", sid); !strings.Contains(show, "phase          working") {
		t.Errorf("the origin folds the forged end:\n%s", show)
	}

	// follow starts a follower of the origin's log on dir and returns
	// `session show` on it once it has folded the log to its end.
	si, _ := dd.readServeInfo()
	follow := func(dir string) (string, func()) {
		t.Helper()
		stopF := run(dir, "serve", "--nats-url", si.URL, "--creds", filepath.Join(data, "creds-follower.json"), "--role", "reader", "--http", "off")
		// Asked before the follower is up, `session show` would open its
		// data dir itself.
		for si, ok := dataDir(dir).readServeInfo(); !ok || si.PID == 0; si, ok = dataDir(dir).readServeInfo() {
			if ctx.Err() != nil {
				t.Fatalf("the follower did not start:\n%s", logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		var show string
		for at := uint64(0); at < end; time.Sleep(50 * time.Millisecond) {
			if ctx.Err() != nil {
				t.Fatalf("the follower did not reach seq %d:\n%s", end, show)
			}
			show, _, _ = cliExit(t, dir, "session", "show", sid, "--creds", filepath.Join(data, "creds-reader.json"))
			if _, rest, ok := strings.Cut(show, "as of          projection at event "); ok {
				at, _ = strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
			}
		}
		return show, stopF
	}

	// A follower that pins no admin key reads the signed log unjudged and
	// folds the forgery: neither of its checks vouches for its state.
	unpinned := t.TempDir()
	_, end1 := follow(unpinned)
	creds := filepath.Join(data, "creds-reader.json")
	for _, args := range [][]string{{"replay", "--verify"}, {"verify"}} {
		out, errOut, code := cliExit(t, unpinned, append(args, "--creds", creds)...)
		if code != 1 || !strings.Contains(out, "NOT JUDGED: the log is signed since seq 1 ") {
			t.Errorf("%s on a follower that pins no admin key: exit %d; want 1 and NOT JUDGED named:\n%s%s", args, code, out, errOut)
		}
	}
	jout, _, _ := cliExit(t, unpinned, "replay", "--verify", "--json", "--creds", creds)
	if !strings.Contains(jout, `"signed_unjudged": 1`) {
		t.Errorf("replay --verify --json on the unpinned follower lacks signed_unjudged:\n%s", jout)
	}
	end1() // a follower's credentials answer for one follower at a time

	pub, err := os.ReadFile(dd.keyPath("admin.pub"))
	if err != nil {
		t.Fatal(err)
	}
	cli(t, follower, "keys", "pin", strings.TrimSpace(string(pub)))
	if show, _ := follow(follower); !strings.Contains(show, "phase          working") {
		t.Errorf("the follower folds the forged end:\n%s", show)
	}
}
