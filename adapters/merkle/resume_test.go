package merkle

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"golang.org/x/mod/sumdb/note"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// appendActivity appends an activity change of session id at ver,
// expecting the session's last sequence to be expect.
func appendActivity(t *testing.T, l *natslog.Log, id string, ver, expect uint64) {
	t.Helper()
	e := events.NewRegistry().New(events.SessionActivityChanged{From: "thinking", To: "tool:Bash"})
	e.ID, e.Agg, e.Ver, e.At = ulid.Make(), events.Aggregate{Kind: events.KindSession, ID: id}, ver, testTime
	e.Cause = &events.Cause{Kind: "hook", Event: "PreToolUse", Ref: e.ID.String()}
	if _, err := l.Append(t.Context(), events.Batch{Agg: e.Agg, Expect: expect, Events: []events.Envelope{e}}); err != nil {
		t.Fatalf("append %s ver %d: %v", id, ver, err)
	}
}

// resigned publishes the event stored at seq again, with its body as
// stored, signed anew by k over no expected sequence: a copy whose
// signature verifies, which only its aggregate's order tells.
func resigned(t *testing.T, s *signed, seq uint64, k *attestation.Key) {
	t.Helper()
	for m, err := range s.log.ReadRaw(t.Context(), natslog.StreamSubjects, seq) {
		if err != nil {
			t.Fatal(err)
		}
		nm := nats.NewMsg(m.Subject)
		nm.Data = m.Data
		id, sig := k.Sign(m.Subject, "", m.Data)
		nm.Header.Set(attestation.HeaderKey, id)
		nm.Header.Set(attestation.HeaderSig, sig)
		if _, err := s.js.PublishMsg(t.Context(), nm); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no message at seq %d", seq)
}

// judgedFresh is what a Judger from the log's start states of s's log
// up to upto.
func judgedFresh(t *testing.T, s *signed, upto uint64) map[uint64]attestation.Verdict {
	t.Helper()
	j := s.log.NewJudger(s.admin.Public())
	if err := j.CatchUp(t.Context(), upto); err != nil {
		t.Fatal(err)
	}
	return j.Quarantined()
}

// A restarted serve takes up judging from its last statement: it judges
// only the messages past it, and states what a Judger from the log's
// start states, an aggregate's order taken up from its events the
// statement covers (a copy of one of them, signed anew, is replayed).
func TestResumeJudger_JudgesOnlyWhatFollows(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s) // seq 1..8, seq 7 an unsigned forgery
	cp := judging(t, s)
	if _, _, err := cp.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := cp.Judge.Judged(); got != 8 {
		t.Fatalf("the first statement judged %d messages, want 8", got)
	}
	// Serve stops and starts again: a new Judger, the same stored tree.
	j, why, err := ResumeJudger(t.Context(), s.log, s.js, cp.Tree, s.dir, s.admin.Public())
	if err != nil {
		t.Fatal(err)
	}
	if through, dropped := j.Resumed(); through != 8 || dropped != "" || !strings.Contains(why, "judging from seq 9") {
		t.Fatalf("resumed from %d (dropped %q): %q; want from the statement of seq 1..8", through, dropped, why)
	}
	resigned(t, s, 6, s.serve) // seq 9: s3's only event again
	appendActivity(t, s.log, "s4", 2, 8)
	forgeStarted(t, s.host, "s10", nil) // seq 11, unsigned
	appendStarted(t, s.log, "s11", "/work/f")
	restarted := &Checkpointer{Log: s.log, JS: s.js, Tree: cp.Tree, Signer: cp.Signer, Origin: cp.Origin, Judge: j}
	stated, _, err := restarted.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if stated.Size != 12 {
		t.Fatalf("statement of %d messages, want 12", stated.Size)
	}
	if got := j.Judged(); got != 4 {
		t.Errorf("the restarted serve judged %d messages, want 4 (seq 9..12)", got)
	}
	got := j.Quarantined()
	if diff := cmp.Diff(judgedFresh(t, s, 12), got); diff != "" {
		t.Errorf("quarantined (-from the start +taken up):\n%s", diff)
	}
	if got[9].Status != attestation.Replayed || got[11].Status != attestation.Unsigned || got[7].Status != attestation.Unsigned || len(got) != 3 {
		t.Errorf("quarantined %+v; want seq 7 and 11 unsigned, seq 9 replayed", got)
	}
	// Taken up again, from the second statement: nothing is left to judge.
	again, _, err := ResumeJudger(t.Context(), s.log, s.js, cp.Tree, s.dir, s.admin.Public())
	if err != nil {
		t.Fatal(err)
	}
	if err := again.CatchUp(t.Context(), 12); err != nil {
		t.Fatal(err)
	}
	if n, through := again.Judged(), again.Through(); n != 0 || through != 12 {
		t.Errorf("taken up from the statement of 12: judged %d, through %d; want 0, 12", n, through)
	}
}

// A statement a reader would not take (signed by a key not trusted, or
// whose root the stored hashes do not make) is not taken up: the log is
// judged from its start.
func TestResumeJudger_UntrustedStatementNotTaken(t *testing.T) {
	skey, _, err := note.GenerateKey(rand.Reader, "logbook-checkpoint/intruder")
	if err != nil {
		t.Fatal(err)
	}
	intruder, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		last func(cp *Checkpointer) ([]byte, error) // the last statement published
		why  string
	}{
		{"signed by a key not trusted", func(cp *Checkpointer) ([]byte, error) {
			root, err := cp.Tree.Root(8)
			if err != nil {
				return nil, err
			}
			return Judgment{Checkpoint: Checkpoint{Origin: cp.Origin, Size: 8, Root: root}}.Sign(intruder)
		}, "judgment statement"},
		{"a root the stored hashes do not make", func(cp *Checkpointer) ([]byte, error) {
			root, err := cp.Tree.Root(7) // the root of 7 leaves for a statement of 8
			if err != nil {
				return nil, err
			}
			return Judgment{Checkpoint: Checkpoint{Origin: cp.Origin, Size: 8, Root: root}}.Sign(cp.Signer)
		}, "the stored hashes make root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSigned(t)
			fillSigned(t, s)
			cp := judging(t, s)
			_, cpSeq, err := cp.Once(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			last, err := tc.last(cp)
			if err != nil {
				t.Fatal(err)
			}
			if err := PublishJudgment(t.Context(), s.js, cpSeq, last); err != nil {
				t.Fatal(err)
			}
			j, why, err := ResumeJudger(t.Context(), s.log, s.js, cp.Tree, s.dir, s.admin.Public())
			if err != nil {
				t.Fatal(err)
			}
			if through, _ := j.Resumed(); through != 0 || !strings.Contains(why, "from its start") || !strings.Contains(why, tc.why) {
				t.Fatalf("resumed from %d: %q; want from the start, saying %q", through, why, tc.why)
			}
			appendStarted(t, s.log, "s5", "/work/e")
			if err := j.CatchUp(t.Context(), 9); err != nil {
				t.Fatal(err)
			}
			if got := j.Judged(); got != 9 {
				t.Errorf("judged %d messages, want all 9", got)
			}
			if diff := cmp.Diff(judgedFresh(t, s, 9), j.Quarantined()); diff != "" {
				t.Errorf("quarantined (-from the start +got):\n%s", diff)
			}
		})
	}
}

// A message the statement covers changed since it was judged (the
// stream re-created with one body edited, the stored hashes and a
// statement of the same root carried over to its new origin, so that
// the statement itself still proves): the Judger that took the statement
// up reads the message (a key event at once; an aggregate's event when
// its aggregate moves past the statement), finds it is not its leaf,
// drops the statement and judges the whole log, quarantining the edited
// event.
func TestResumeJudger_ChangedLogNotTrusted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seq   uint64
		edit  func([]byte) []byte
		after func(t *testing.T, s *signed) // what is appended past the statement
	}{
		{"key event", 2, func(b []byte) []byte { return bytes.Replace(b, []byte("serve@test"), []byte("serve@tesT"), 1) },
			func(t *testing.T, s *signed) { appendStarted(t, s.log, "s5", "/work/e") }},
		{"event of an aggregate that moves", 6, func(b []byte) []byte { return bytes.Replace(b, []byte("MARKER-s3"), []byte("MARKER-s7"), 1) },
			func(t *testing.T, s *signed) { appendActivity(t, s.log, "s3", 2, 6) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSigned(t)
			fillSigned(t, s)
			cp := judging(t, s)
			if _, _, err := cp.Once(t.Context()); err != nil {
				t.Fatal(err)
			}
			// The stored message changes, and with it the statement
			// the checkpoint key signs, which takes the last verdicts
			// over: what the Judger took up from no longer holds.
			rewritten(t, s, cp, tc.seq, tc.edit)
			id, err := s.log.Identity(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			tree, err := OpenStoredTree(s.dir, Origin(id))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tree.Close() })
			tc.after(t, s)
			j, _, err := ResumeJudger(t.Context(), s.log, s.js, tree, s.dir, s.admin.Public())
			if err != nil {
				t.Fatal(err)
			}
			if err := j.CatchUp(t.Context(), 9); err != nil {
				t.Fatal(err)
			}
			through, dropped := j.Resumed()
			if through != 0 || !strings.Contains(dropped, "not taken up") || !strings.Contains(dropped, fmt.Sprintf("seq %d:", tc.seq)) {
				t.Fatalf("resumed from %d, dropped %q; want the statement dropped", through, dropped)
			}
			if got := j.Judged(); got != 9 {
				t.Errorf("judged %d messages, want all 9", got)
			}
			got := j.Quarantined()
			if diff := cmp.Diff(judgedFresh(t, s, 9), got); diff != "" {
				t.Errorf("quarantined (-from the start +got):\n%s", diff)
			}
			if _, ok := got[tc.seq]; !ok {
				t.Errorf("quarantined %+v; want the edited seq %d among them", got, tc.seq)
			}
		})
	}
}

// Serve's checkpoints (Actor), stopped and started again on the same
// data dir, take up judging from the statement the first run published:
// the second says it judges from the first message past it, and states
// the whole log.
func TestActor_RestartTakesUpFromItsLastStatement(t *testing.T) {
	s := startSigned(t)
	fillSigned(t, s)
	var (
		mu    sync.Mutex
		lines []string
	)
	said := func(want string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if strings.Contains(l, want) {
				return true
			}
		}
		return false
	}
	judged := reader(t, s) // serve's log judges its reads
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		r, closer, err := Actor(ctx, ActorConfig{Dir: s.dir, Log: judged, JS: s.js, Interval: 20 * time.Millisecond,
			Say: func(f string, a ...any) {
				mu.Lock()
				lines = append(lines, fmt.Sprintf(f, a...))
				mu.Unlock()
			}})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = r(ctx); close(done) }()
		return func() { cancel(); <-done; closer.Close() }
	}
	trust := keys(t, s.dir)
	stated := func(size int64) {
		t.Helper()
		for {
			st, err := s.js.Stream(t.Context(), CheckpointStream)
			if err == nil {
				if m, err := st.GetLastMsgForSubject(t.Context(), JudgmentSubject); err == nil {
					if j, _, err := OpenJudgment(m.Data, trust.Checkpoint); err == nil && j.Size == size {
						return
					}
				}
			}
			if t.Context().Err() != nil {
				t.Fatalf("no statement of %d messages", size)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stop := run()
	trust = keys(t, s.dir) // the checkpoint key the first run made
	stated(8)
	stop()
	// A log never checkpointed is said to be one, not one checkpointed
	// before serve stated its judgments.
	if !said("judgments: judging the log from its start: no checkpoints yet") {
		t.Errorf("the first run said %q; want it judging from the start, with no checkpoints yet", lines)
	}
	appendStarted(t, s.log, "s5", "/work/e")
	appendStarted(t, s.log, "s6", "/work/f")
	stop = run()
	stated(10)
	stop()
	if !said("judgments: judging from seq 9") {
		t.Errorf("the second run said %q; want it judging from seq 9", lines)
	}
}

// Actor says the cadence its Checkpointer keeps: with Every and Interval
// left 0, the defaults, never "every 0 messages or 0s".
func TestActor_SaysTheCadenceItKeeps(t *testing.T) {
	s := startSigned(t)
	for _, tc := range []struct {
		every    int64
		interval time.Duration
		want     string
	}{
		{0, 0, fmt.Sprintf("every %d messages or %s ", DefaultEvery, DefaultInterval)},
		{-3, -time.Second, fmt.Sprintf("every %d messages or %s ", DefaultEvery, DefaultInterval)},
		{7, 250 * time.Millisecond, "every 7 messages or 250ms "},
	} {
		var lines []string
		_, closer, err := Actor(t.Context(), ActorConfig{Dir: s.dir, Log: s.log, JS: s.js, Every: tc.every, Interval: tc.interval,
			Say: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }})
		if err != nil {
			t.Fatal(err)
		}
		closer.Close()
		if len(lines) == 0 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("Every %d, Interval %s: said %q; want %q", tc.every, tc.interval, lines, tc.want)
		}
	}
}
