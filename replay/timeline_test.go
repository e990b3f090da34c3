package replay_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections/projectionstest"
	"github.com/logbook-dev/logbook/reducers/review"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

// scenario is one Claude Code session, step by step: a prompt, a Bash
// call that needs permission, a question at the end of the turn, a mode
// change from the CLI, and the end of the session.
func scenario(t *testing.T) *projectionstest.History {
	t.Helper()
	h := projectionstest.NewHistory(projectionstest.Epoch())
	meta := events.Meta{SessionID: "agent-s1", Cwd: "/w/app", Model: "claude-opus", AgentMode: "default"}
	line, key := 0, 0
	observe := func(kind string, hook bool, sigs ...events.Sig) {
		t.Helper()
		o := events.Observation{Parser: "claude-test/1", Kind: kind, Meta: meta, Signals: sigs}
		var p events.Payload
		if hook {
			key++
			o.Key = fmt.Sprintf("hook-%d", key)
			p = events.ClaudeHookObserved{Observation: o}
		} else {
			line++
			o.Line, o.Key, o.Path = line, fmt.Sprintf("line-%d", line), "/t/s1.jsonl"
			p = events.ClaudeLineObserved{Observation: o}
		}
		if recs, err := h.Observe("s1", p, "turn-1"); err != nil || recs == nil {
			t.Fatalf("observe %s: %v (refused: %d)", kind, err, h.Rejected)
		}
		h.Tick(1500 * time.Millisecond)
	}
	observe("SessionStart", true, events.Sig{Kind: events.SigSessionStart, Name: "startup"})
	observe("user", false, events.Sig{Kind: events.SigPrompt, ID: "p1"})
	observe("assistant", false, events.Sig{Kind: events.SigThinking}, events.Sig{Kind: events.SigToolUse, ID: "toolu_1", Name: "Bash"})
	observe("PermissionRequest", true, events.Sig{Kind: events.SigPermission, ID: "toolu_1", Name: "Bash", Text: "rm -rf build"})
	observe("user", false, events.Sig{Kind: events.SigToolResult, ID: "toolu_1", Status: events.OutcomeOK})
	observe("assistant", false, events.Sig{Kind: events.SigText, Text: "Build cleaned. Push now?"}, events.Sig{Kind: events.SigTurnEnd})
	cause := events.Cause{Kind: "cli", Event: "mode", Ref: "req-1"}
	if recs, err := h.Request("s1", session.ChangeMode{Mode: events.ModeFullAccess, At: h.Now(), Cause: cause}); err != nil || recs == nil {
		t.Fatalf("change mode: %v", err)
	}
	h.Tick(time.Second)
	observe("SessionEnd", true, events.Sig{Kind: events.SigSessionEnd, Text: "prompt_input_exit"})
	return h
}

func TestTimeline(t *testing.T) {
	t.Parallel()
	h := scenario(t)
	log := logWith(t, h)
	got, err := replay.Timeline(t.Context(), log, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(replay.TimelineOf(h.Records), got); diff != "" {
		t.Errorf("Timeline from the log differs from the records' (-records +log):\n%s", diff)
	}
	var text bytes.Buffer
	if err := replay.WriteText(&text, got); err != nil {
		t.Fatal(err)
	}
	golden(t, "timeline.txt", text.Bytes())
	js, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "timeline.json", append(js, '\n'))

	// Every decision is an item; every observation-caused one names its
	// observation.
	decisions := 0
	for _, r := range h.Records {
		if _, ok := events.Observed(r.Data); !ok {
			decisions++
		}
	}
	if len(got) != decisions {
		t.Errorf("%d items, want %d decisions", len(got), decisions)
	}
	for _, it := range got {
		if it.Cause == nil {
			t.Errorf("#%d %s has no cause", it.Seq, it.Type)
		}
		if (it.Obs == nil) != (it.Cause != nil && it.Cause.Kind == "cli") {
			t.Errorf("#%d %s: obs %+v for cause %+v", it.Seq, it.Type, it.Obs, it.Cause)
		}
	}

	if _, err := replay.Timeline(t.Context(), log, "nobody"); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("Timeline(nobody) = %v, want ErrNotFound", err)
	}
}

func TestDump(t *testing.T) {
	t.Parallel()
	h := scenario(t)
	log := logWith(t, h)
	var fromLog, fromRecords bytes.Buffer
	if err := replay.Dump(&fromLog, log.Read(t.Context(), 1)); err != nil {
		t.Fatal(err)
	}
	if err := replay.Dump(&fromRecords, projectionstest.Seq(h.Records)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromRecords.String(), fromLog.String()); diff != "" {
		t.Errorf("Dump of the log differs from the records' (-records +log):\n%s", diff)
	}
	golden(t, "dump.txt", fromLog.Bytes())

	bad := h.Records[3].Seq
	var out bytes.Buffer
	err := replay.Dump(&out, projectionstest.SeqFailing(h.Records, bad, events.ErrUnknownType))
	if !errors.Is(err, events.ErrUnknownType) || strings.Count(out.String(), "\n") != int(bad-1) {
		t.Errorf("Dump over a bad record: %d lines, %v; want %d lines and ErrUnknownType", strings.Count(out.String(), "\n"), err, bad-1)
	}
}

// TestRederive: today's reducer agrees with what it recorded, and a
// recorded decision changed after the fact is found at its observation,
// with no cascade into later observations.
func TestRederive(t *testing.T) {
	t.Parallel()
	h := history(t, 6, 300, 4)
	log := logWith(t, h)
	for _, id := range h.Sessions {
		got, err := replay.Rederive(t.Context(), log, id)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Agree() || got.Observations == 0 {
			var b bytes.Buffer
			got.WriteText(&b)
			t.Errorf("Rederive(%s) disagrees:\n%s", id, b.String())
		}
	}
	if _, err := replay.Rederive(t.Context(), log, "nobody"); !errors.Is(err, events.ErrNotFound) {
		t.Errorf("Rederive(nobody) = %v, want ErrNotFound", err)
	}

	sc := scenario(t)
	recs := slices.Clone(sc.Records)
	// Find the transition to waiting on the permission prompt and record
	// another activity instead.
	i := slices.IndexFunc(recs, func(r events.Record) bool {
		d, ok := r.Data.(events.SessionTransitioned)
		return ok && d.To == events.PhaseWaiting
	})
	if i < 0 {
		t.Fatal("scenario has no transition to waiting")
	}
	d := recs[i].Data.(events.SessionTransitioned)
	d.Activity = "tool:Bash"
	recs[i].Data = d
	obs := slices.IndexFunc(recs, func(r events.Record) bool { return r.ID.String() == recs[i].Cause.Ref })

	got := replay.RederiveRecords(recs)
	if got.Agree() || got.Diverged != 1 || got.First == nil {
		t.Fatalf("RederiveRecords = %+v, want exactly one divergence", got)
	}
	if got.First.ObsSeq != recs[obs].Seq || got.First.Index != i-obs-1 {
		t.Errorf("divergence at #%d event %d, want #%d event %d", got.First.ObsSeq, got.First.Index, recs[obs].Seq, i-obs-1)
	}
	var text bytes.Buffer
	if err := got.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "rederive.txt", text.Bytes())

	// A decision dropped from the record is found too.
	dropped := slices.Delete(slices.Clone(sc.Records), i, i+1)
	if got := replay.RederiveRecords(dropped); got.Diverged == 0 {
		t.Error("a dropped decision was not found")
	}
}

// The gate appends its review and verdict in the hook's own batch, with
// the hook's observation as their cause's ref: they are the gate's
// (events.CauseGate), folded as recorded, never compared with what the
// session decider derives from the observation.
func TestRederive_GateEventsInTheHooksBatch(t *testing.T) {
	t.Parallel()
	recs := slices.Clone(scenario(t).Records)
	var (
		s     session.State
		out   []events.Record
		n     int
		shift uint64 // the gate's events move the session's later versions on
	)
	for i := 0; i < len(recs); i++ {
		recs[i].Ver += shift
		out = append(out, recs[i])
		s = session.Evolve(s, recs[i].Envelope)
		obs := recs[i]
		if _, ok := events.Observed(obs.Data); !ok {
			continue
		}
		for i+1 < len(recs) && recs[i+1].Cause != nil && recs[i+1].Cause.Ref == obs.ID.String() {
			i++
			recs[i].Ver += shift
			out = append(out, recs[i])
			s = session.Evolve(s, recs[i].Envelope)
		}
		if o, _ := events.Observed(obs.Data); o.Line > 0 || !s.Exists() || s.Phase == events.PhaseEnded {
			continue // the gate answers hooks, not transcript lines
		}
		verdict := []string{events.VerdictAllow, events.VerdictDeny}[n%2]
		n++
		decs, err := session.Decide(s, session.RequestReview{
			Review: events.ReviewRequested{ReviewID: fmt.Sprintf("gate-%d", n), Tool: "Bash", Action: "ls", Event: "PreToolUse"},
			Answer: &review.Answer{Verdict: verdict, Risk: review.RiskLow, By: events.DecidedBy{Kind: events.DecidedByRule, Name: "Bash(ls)"}},
			At:     obs.At, Cause: events.Cause{Kind: events.CauseGate, Event: "PreToolUse", Detail: "Bash", Ref: obs.ID.String()},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range decs {
			e.ID, e.Ver = ulid.Make(), s.Ver+1
			s = session.Evolve(s, e)
			out = append(out, events.Record{Seq: obs.Seq, Envelope: e})
			shift++
		}
	}
	if n < 2 {
		t.Fatalf("the scenario gave %d observations to gate", n)
	}
	if got := replay.RederiveRecords(out); !got.Agree() || got.Observations == 0 {
		var b bytes.Buffer
		got.WriteText(&b)
		t.Errorf("a gated session disagrees:\n%s", b.String())
	}
}

// TestRederive_ReconcilerDecisionOfNoTick: the reconciler's decisions
// follow the tick observation that decided them, in its batch, and are
// decided again from it; a decision that claims the reconciler as its
// cause with no stored tick before it that decided it (a forged
// agent_gone end, appended alone) is a divergence of its own, named
// with its sequence, not folded as recorded in silence.
func TestRederive_ReconcilerDecisionOfNoTick(t *testing.T) {
	t.Parallel()
	recs := scenario(t).Records
	// The first point between batches where the session is working and
	// a tick past --abandon-after marks it stale.
	var (
		s     session.State
		k     = -1
		batch []events.Record
	)
	for i, r := range recs {
		if _, ok := events.Observed(r.Data); ok && i > 0 && s.Phase == events.PhaseWorking {
			obs := events.NewRegistry().New(events.TickObserved{})
			obs.ID, obs.Agg, obs.At, obs.Actor = ulid.Make(), r.Agg, s.ObservedAt.Add(time.Hour), "logbook-reconciler"
			obs.Ver = s.Ver + 1
			obs.Data = events.TickObserved{Observation: events.Observation{Key: "tick:" + obs.ID.String(), Parser: "logbook-reconciler/1", Kind: "tick",
				Tick: &events.Tick{Now: obs.At, LastObserved: s.ObservedAt, AbandonAfter: time.Minute.Milliseconds()}}}
			decs, err := session.Decide(s, session.Observe{Obs: obs})
			if err != nil {
				t.Fatal(err)
			}
			if len(decs) > 0 {
				k = i
				batch = append(batch, events.Record{Seq: r.Seq, Envelope: obs})
				for j, d := range decs {
					d.ID, d.Ver = ulid.Make(), obs.Ver+1+uint64(j)
					batch = append(batch, events.Record{Seq: r.Seq + 1 + uint64(j), Envelope: d})
				}
				break
			}
		}
		s = session.Evolve(s, r.Envelope)
	}
	if k < 0 {
		t.Fatal("the scenario is never working between batches")
	}
	prefix := slices.Clone(recs[:k])
	if got := replay.RederiveRecords(append(slices.Clone(prefix), batch...)); !got.Agree() {
		var b bytes.Buffer
		got.WriteText(&b)
		t.Fatalf("the reconciler's tick and its marks disagree:\n%s", b.String())
	}

	// Its decisions alone, with no tick before them: each is named.
	orphans := append(slices.Clone(prefix), batch[1:]...)
	got := replay.RederiveRecords(orphans)
	if got.Diverged != len(batch)-1 || got.First == nil || got.First.Seq != batch[1].Seq || got.First.Undecided == "" {
		t.Fatalf("RederiveRecords of the reconciler's marks without their tick = %+v, want %d divergences, the first at seq %d decided by no observation", got, len(batch)-1, batch[1].Seq)
	}
	var text bytes.Buffer
	if err := got.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("first at #%d, decided by no observation", batch[1].Seq); !strings.Contains(text.String(), want) || !strings.Contains(text.String(), batch[1].Type) {
		t.Errorf("WriteText lacks %q and %s:\n%s", want, batch[1].Type, text.String())
	}

	// A tick that is stored but decided nothing of the kind: its
	// decisions named another tick.
	moved := append(slices.Clone(prefix), batch...)
	for i := len(prefix) + 1; i < len(moved); i++ {
		c := *moved[i].Cause
		c.Ref = ulid.Make().String()
		moved[i].Cause = &c
	}
	if got := replay.RederiveRecords(moved); got.Agree() {
		t.Error("the reconciler's marks naming another tick agree")
	}
}
