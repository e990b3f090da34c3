package replay_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/oklog/ulid/v2"
	"pgregory.net/rapid"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// TestLive_Rapid: random session histories, decided live through
// events.Executor and the session reducer against a real log (an embedded
// JetStream server), one goroutine per session so the log's group commit
// merges their decisions, give the same state every way it can be built:
//
//   - the Executor's own states, decided live;
//   - a fold of the log from scratch (replay.Fold with session.Evolve);
//   - a fresh projection of the whole log (replay.At), whose rows are
//     those states;
//   - a Runner applying the log in random batch sizes (RunOnce);
//   - a Runner stopped after a random number of batches, its store closed
//     and reopened, then run to the end with another batch size;
//   - a Runner following the log live while it is written, stopped at a
//     random point, its store closed and reopened, and started again.
//
// The four projections have one state hash. projections/rapid_test.go
// covers the store over in-memory histories; this covers the whole path.
func TestLive_Rapid(t *testing.T) {
	if !rapidChecksSet() {
		f := flag.Lookup("rapid.checks")
		old := f.Value.String()
		if err := f.Value.Set(strconv.Itoa(liveChecks)); err != nil {
			t.Fatal(err)
		}
		defer f.Value.Set(old)
	}
	// Beside the package's other tests once the count is set: it is the
	// package's only rapid check, so none reads the flag meanwhile.
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		h := drawLiveHistory(t)
		log, stop := liveLog(t)
		defer stop()
		fs := vfs.NewMem()
		reg := events.NewRegistry()
		x := &events.Executor[session.State]{
			Log: log, Reg: reg, Init: session.Init, Evolve: session.Evolve,
			IDs: ulid.Make, Host: "host-a", Actor: "claude-code",
		}

		// The follower projects while the history is decided, and is
		// restarted (store closed and reopened) after restartAt inputs.
		restartAt := rapid.IntRange(0, len(h.inputs)).Draw(t, "restartAt")
		follow := startFollower(t, fs, "follow", log)
		defer func() { follow.stop(t) }() // the current one, when the check fails early
		var done atomic.Int64
		errs := make(chan error, len(h.sessions))
		var wg sync.WaitGroup
		for _, id := range h.sessions {
			wg.Go(func() {
				agg := events.Aggregate{Kind: events.KindSession, ID: id}
				for _, in := range h.bySession[id] {
					_, _, err := x.Execute(ctx, agg, func(s session.State) (events.Decision, error) { return in.decide(reg, s) })
					done.Add(1)
					if err != nil && !errors.Is(err, events.ErrRejected) && !errors.Is(err, events.ErrNotFound) {
						errs <- fmt.Errorf("%s: input %d: %w", id, in.step, err)
						return
					}
				}
			})
		}
		for done.Load() < int64(restartAt) && len(errs) == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		follow.stop(t)
		follow = startFollower(t, fs, "follow", log)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		last, err := log.LastSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}

		// Live: the Executor's states.
		live := map[string]session.State{}
		for _, id := range h.sessions {
			s, err := x.State(ctx, events.Aggregate{Kind: events.KindSession, ID: id})
			if err != nil {
				t.Fatal(err)
			}
			if s.Exists() {
				live[id] = s
			}
		}

		// A fold from scratch.
		folded, seq, err := replay.Fold(log.Read(ctx, 1), map[string]session.State{}, func(m map[string]session.State, e events.Envelope) map[string]session.State {
			s, ok := m[e.Agg.ID]
			if !ok {
				s = session.Init(e.Agg)
			}
			m[e.Agg.ID] = session.Evolve(s, e)
			return m
		})
		if err != nil || seq != last {
			t.Fatalf("Fold = seq %d, %v; want seq %d", seq, err, last)
		}
		// A hook that says nothing leaves its observation in an
		// aggregate that never started.
		maps.DeleteFunc(folded, func(_ string, s session.State) bool { return !s.Exists() })
		sameStates(t, "fold", folded, live)

		// A fresh projection: its rows are the live states.
		scratch, err := replay.At(ctx, log, replay.Point{}, "")
		if err != nil {
			t.Fatal(err)
		}
		defer scratch.Close()
		want := liveHash(t, scratch, last)
		rows := map[string]session.State{}
		for id := range live {
			if rows[id], err = scratch.Session(id); err != nil {
				t.Fatalf("row %s: %v", id, err)
			}
		}
		sameStates(t, "projection", rows, live)

		// Random batch sizes.
		batched := openLive(t, fs, "batched")
		defer batched.Close()
		r := &projections.Runner{Log: log, Store: batched, Batch: rapid.IntRange(1, 25).Draw(t, "batch")}
		for {
			n, err := r.RunOnce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		if got := liveHash(t, batched, last); got != want {
			t.Fatalf("batches of %d: hash %s, scratch %s", r.Batch, got, want)
		}

		// A restart after a random number of batches.
		restarted := openLive(t, fs, "restarted")
		r = &projections.Runner{Log: log, Store: restarted, Batch: rapid.IntRange(1, 25).Draw(t, "batchBefore")}
		for range rapid.IntRange(0, 10).Draw(t, "batchesBefore") {
			if _, err := r.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		cp := restarted.Checkpoint()
		if err := restarted.Close(); err != nil {
			t.Fatal(err)
		}
		restarted = openLive(t, fs, "restarted")
		defer restarted.Close()
		if got := restarted.Checkpoint(); got != cp {
			t.Fatalf("checkpoint %d after reopening, %d before", got, cp)
		}
		r = &projections.Runner{Log: log, Store: restarted, Batch: rapid.IntRange(1, 1000).Draw(t, "batchAfter")}
		if _, err := r.RunToEnd(ctx); err != nil {
			t.Fatal(err)
		}
		if got := liveHash(t, restarted, last); got != want {
			t.Fatalf("restart at checkpoint %d: hash %s, scratch %s", cp, got, want)
		}

		// The live follower, restarted while the history was decided.
		for deadline := time.Now().Add(20 * time.Second); follow.store.Checkpoint() < last; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("follower stuck at %d of %d", follow.store.Checkpoint(), last)
			}
		}
		follow.stop(t)
		follow = startFollower(t, fs, "follow", log)
		if got := liveHash(t, follow.store, last); got != want {
			t.Fatalf("follower restarted after %d inputs: hash %s, scratch %s", restartAt, got, want)
		}
	})
}

// liveChecks is how many histories TestLive_Rapid draws unless
// -rapid.checks or RAPID_CHECKS says otherwise: every history is decided
// through a real log, where each multi-event decision is an atomic batch
// that costs the server milliseconds, so rapid's default of 100 would
// make this one test take most of a minute.
const liveChecks = 20

// rapidChecksSet reports whether the number of rapid checks was chosen
// on the command line or in the environment.
func rapidChecksSet() bool {
	set := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	return set
}

// liveHistory is a drawn history: inputs (observations and requests) for
// a few sessions, each input deciding against whatever state its session
// has when it runs.
type liveHistory struct {
	sessions  []string
	inputs    []*liveInput
	bySession map[string][]*liveInput
}

// liveInput is one input to the session reducer.
type liveInput struct {
	step int
	id   ulid.ULID // the observation's event id
	at   time.Time
	// An observation: a transcript line (its number is the session's
	// next) or a hook with key.
	line    bool
	key     string
	kind    string
	meta    events.Meta
	signals []events.Sig
	// A request instead, when cmd is set; entry picks an open entry for
	// Abandon (by index, modulo the open entries).
	cmd   string
	arg   string
	entry int
}

// decide decides the input in s, for events.Executor: what the claude
// ingester does for an observation, or a CLI request. reg builds the
// observation's envelope.
func (in *liveInput) decide(reg *events.Registry, s session.State) (events.Decision, error) {
	cause := events.Cause{Kind: "cli", Event: in.cmd, Ref: "req-" + strconv.Itoa(in.step)}
	switch in.cmd {
	case "":
	case "end":
		return session.Decide(s, session.End{Reason: in.arg, At: in.at, Cause: cause})
	case "mode":
		return session.Decide(s, session.ChangeMode{Mode: in.arg, At: in.at, Cause: cause})
	case "attach":
		return session.Decide(s, session.Attach{EntryID: in.arg, Activity: "command:go", At: in.at, Cause: cause})
	case "detach":
		return session.Decide(s, session.Detach{EntryID: in.arg, Outcome: "exit 1", At: in.at, Cause: cause})
	case "abandon":
		entry := "none"
		if len(s.Entries) > 0 {
			entry = s.Entries[in.entry%len(s.Entries)].EntryID
		}
		return session.Decide(s, session.Abandon{EntryID: entry, Reason: "requested", At: in.at, Cause: cause})
	}
	o := events.Observation{Key: in.key, Parser: "claude-test/1", Kind: in.kind, Meta: in.meta, Signals: in.signals}
	var p events.Payload = events.ClaudeHookObserved{Observation: o}
	if in.line {
		o.Line = s.Lines + 1
		o.Key = "line:" + strconv.Itoa(o.Line)
		o.Path = "/home/u/.claude/projects/p/" + s.ID + ".jsonl"
		p = events.ClaudeLineObserved{Observation: o}
	}
	if s.Seen(&o) {
		return nil, nil
	}
	obs := reg.New(p)
	obs.ID, obs.Agg, obs.At, obs.Corr = in.id, events.Aggregate{Kind: events.KindSession, ID: s.ID}, in.at, "turn-"+strconv.Itoa(s.Turns)
	decided, err := session.Decide(s, session.Observe{Obs: obs})
	if err != nil {
		return nil, err
	}
	return append(events.Decision{obs}, decided...), nil
}

// drawLiveHistory draws 1..4 sessions and up to 60 inputs for them.
func drawLiveHistory(t *rapid.T) *liveHistory {
	h := &liveHistory{bySession: map[string][]*liveInput{}}
	n := rapid.IntRange(1, 4).Draw(t, "sessions")
	for i := range n {
		h.sessions = append(h.sessions, "s"+strconv.Itoa(i+1))
	}
	at := time.Date(2026, 4, 24, 19, 0, 0, 0, time.UTC)
	hooks := map[string][]string{} // each session's hook keys so far
	for step := range rapid.IntRange(1, 60).Draw(t, "inputs") {
		at = at.Add(time.Duration(rapid.IntRange(0, 3000).Draw(t, "tick")) * time.Millisecond)
		id := rapid.SampledFrom(h.sessions).Draw(t, "session")
		in := &liveInput{step: step, at: at, id: liveID(at, step)}
		switch kind := rapid.IntRange(0, 11).Draw(t, "kind"); {
		case kind < 5:
			in.line = true
			in.kind = rapid.SampledFrom([]string{"user", "assistant", "system/turn_duration"}).Draw(t, "lineKind")
		case kind < 10:
			in.kind = rapid.SampledFrom([]string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Notification", "Stop", "SubagentStart", "SubagentStop", "PreCompact", "SessionEnd"}).Draw(t, "hookKind")
			in.key = "hook-" + strconv.Itoa(step)
			if prev := hooks[id]; len(prev) > 0 && rapid.IntRange(0, 9).Draw(t, "redeliver") == 0 {
				in.key = rapid.SampledFrom(prev).Draw(t, "redelivered") // a hook delivered again
			}
			hooks[id] = append(hooks[id], in.key)
		default:
			in.cmd = rapid.SampledFrom([]string{"end", "mode", "attach", "detach", "abandon"}).Draw(t, "request")
			in.entry = rapid.IntRange(0, 7).Draw(t, "entry")
			switch in.cmd {
			case "end":
				in.arg = "cli"
			case "mode":
				in.arg = rapid.SampledFrom([]string{events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeAuto, events.ModeFullAccess, "bogus"}).Draw(t, "mode")
			case "attach", "detach":
				in.arg = "cmd-" + strconv.Itoa(rapid.IntRange(1, 3).Draw(t, "command"))
			}
		}
		if in.cmd == "" {
			in.meta = events.Meta{
				SessionID: id,
				Cwd:       rapid.SampledFrom([]string{"/w/a", "/w/a", "/w/b"}).Draw(t, "cwd"),
				Model:     rapid.SampledFrom([]string{"", "claude-opus", "claude-sonnet", "<synthetic>"}).Draw(t, "model"),
				AgentMode: rapid.SampledFrom([]string{"", "", "default", "plan", "acceptEdits", "bypassPermissions"}).Draw(t, "agentMode"),
			}
			for range rapid.IntRange(0, 4).Draw(t, "signals") {
				in.signals = append(in.signals, drawSignal(t))
			}
		}
		h.inputs = append(h.inputs, in)
		h.bySession[id] = append(h.bySession[id], in)
	}
	return h
}

// drawSignal draws one signal; tool, task and subagent ids come from small
// pools so uses meet their results.
func drawSignal(t *rapid.T) events.Sig {
	tool := rapid.SampledFrom([]string{"t1", "t2", "t3"}).Draw(t, "tool")
	switch rapid.IntRange(0, 15).Draw(t, "signal") {
	case 0:
		return events.Sig{Kind: events.SigSessionStart, Name: "startup"}
	case 1, 2:
		return events.Sig{Kind: events.SigPrompt, ID: "p" + tool}
	case 3:
		return events.Sig{Kind: events.SigThinking}
	case 4:
		return events.Sig{Kind: events.SigText, Text: rapid.SampledFrom([]string{"done.", "shall I go on?"}).Draw(t, "text")}
	case 5, 6:
		return events.Sig{Kind: events.SigToolUse, ID: tool, Name: rapid.SampledFrom([]string{"Bash", "Read", "AskUserQuestion", "Task"}).Draw(t, "toolName"), Background: rapid.Bool().Draw(t, "background")}
	case 7, 8:
		return events.Sig{Kind: events.SigToolResult, ID: tool, Status: rapid.SampledFrom([]string{events.OutcomeOK, events.OutcomeError, events.OutcomeRejected, events.OutcomeInterrupted, events.OutcomeBackground}).Draw(t, "status"), Task: rapid.SampledFrom([]string{"", "b1"}).Draw(t, "task")}
	case 9:
		return events.Sig{Kind: events.SigTurnEnd}
	case 10:
		return events.Sig{Kind: events.SigInterrupt}
	case 11:
		return events.Sig{Kind: events.SigPermission, ID: tool, Name: "Bash"}
	case 12:
		return events.Sig{Kind: events.SigIdle}
	case 13:
		return events.Sig{Kind: rapid.SampledFrom([]string{events.SigCompactStart, events.SigCompactEnd}).Draw(t, "compact")}
	case 14:
		return events.Sig{Kind: events.SigBackgroundDone, Task: "b1", Status: "completed"}
	default:
		return events.Sig{Kind: rapid.SampledFrom([]string{events.SigSubagentStart, events.SigSubagentStop}).Draw(t, "subagent"), ID: "x1", Name: "Explore"}
	}
}

// liveID returns a deterministic event id: at's time and step.
func liveID(at time.Time, step int) ulid.ULID {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(at))
	binary.BigEndian.PutUint64(id[8:], uint64(step)+1)
	return id
}

// liveLog starts an embedded JetStream server in a fresh directory and
// opens the log on it; stop closes both and removes the directory.
func liveLog(t *rapid.T) (*natslog.Log, func()) {
	dir, err := os.MkdirTemp("", "logbook-live-rapid-")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natslog.StartEmbedded(context.Background(), natslog.EmbeddedConfig{StoreDir: dir, Fsync: natslog.FsyncInterval})
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	log, err := natslog.Open(context.Background(), srv.Conn(), natslog.Config{})
	if err != nil {
		srv.Shutdown()
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	return log, func() {
		log.Close()
		srv.Shutdown()
		os.RemoveAll(dir)
	}
}

// openLive opens the store in dir of fs.
func openLive(t *rapid.T, fs vfs.FS, dir string) *projections.Store {
	s, err := projections.Open(dir, projections.Options{FS: fs})
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return s
}

// liveHash returns s's state hash and fails unless s is at checkpoint want.
func liveHash(t *rapid.T, s *projections.Store, want uint64) string {
	h, cp, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if cp != want {
		t.Fatalf("%s at checkpoint %d, want %d", s.Dir(), cp, want)
	}
	return h
}

// sameStates fails unless got and want hold the same sessions with the
// same JSON.
func sameStates(t *rapid.T, what string, got, want map[string]session.State) {
	if len(got) != len(want) {
		t.Fatalf("%s: %d sessions, live %d", what, len(got), len(want))
	}
	for id, w := range want {
		gj, _ := json.Marshal(got[id])
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Fatalf("%s: session %s\n got %s\nlive %s", what, id, gj, wj)
		}
	}
}

// follower is a Runner following the log live into a store.
type follower struct {
	store  *projections.Store
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startFollower opens the store in dir of fs and runs a Runner on it.
func startFollower(t *rapid.T, fs vfs.FS, dir string, log events.Log) *follower {
	f := &follower{store: openLive(t, fs, dir), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() {
		f.done <- (&projections.Runner{Log: log, Store: f.store, Interval: time.Millisecond}).Run(ctx)
	}()
	return f
}

// stop stops the Runner and closes its store; later calls do nothing.
func (f *follower) stop(t *rapid.T) {
	f.once.Do(func() {
		f.cancel()
		if err := <-f.done; !errors.Is(err, context.Canceled) {
			t.Errorf("follower: %v", err)
		}
		if err := f.store.Close(); err != nil {
			t.Errorf("close follower store: %v", err)
		}
	})
}
