package codex

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logbook-dev/logbook/adapters/internal/ingesttest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// tokens returns a token_count line with running totals in/out and, when
// lastIn > 0, the call's own usage lastIn/lastOut.
func tokens(sec int, in, out, lastIn, lastOut int64) string {
	last := ""
	if lastIn > 0 {
		last = fmt.Sprintf(`,"last_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d}`, lastIn, lastOut, lastIn+lastOut)
	}
	return ev(sec, "event_msg", fmt.Sprintf(`{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":%d,"reasoning_output_tokens":0,"total_tokens":%d}%s}}`, in, out, in+out, last))
}

// TestImport_SubagentLineage: a Codex subagent's rollout names its parent
// only in session_meta.source.subagent.thread_spawn and begins with a copy
// of the parent's history (turns older than the subagent's thread). Its
// session is linked to the parent's, holds its own turn only, and its
// spend is its own calls' (29,000/1,700 tokens, not 49,000/2,700 with the
// parent's history again), whether its totals go on from the parent's or
// start afresh, and whichever file is imported first.
func TestImport_SubagentLineage(t *testing.T) {
	const (
		parent = "019e6f00-0000-7000-8000-000000000001"
		sub    = "019e7000-0000-7000-8000-000000000002"
	)
	for _, ids := range [][2]string{
		// UUIDv7 turn ids: the parent's before the subagent's thread, its own after.
		{"019e6f00-0001-7000-8000-000000000003", "019e7000-0001-7000-8000-00000000000a"},
		// Other ids: the copied lines' times are before the thread began.
		{"parent-turn-1", "own-turn-1"},
	} {
		subagentLineage(t, parent, sub, ids[0], ids[1])
	}
}

func subagentLineage(t *testing.T, parent, sub, parentTurn, ownTurn string) {
	parentLines := []string{meta(parent, ""), turnCtx(1, parentTurn), turnStart(1, parentTurn), userMsg(1, "split the work"),
		tokens(2, 20000, 1000, 20000, 1000), turnDone(3, parentTurn)}
	subMeta := ev(4, "session_meta", fmt.Sprintf(`{"id":%q,"cwd":"/home/user/p","originator":"codex-tui","cli_version":"0.147.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q,"depth":1,"agent_role":"explorer"}}},"thread_source":"subagent"}`, sub, parent))
	copied := []string{turnCtx(1, parentTurn), turnStart(1, parentTurn), userMsg(1, "split the work"), tokens(2, 20000, 1000, 20000, 1000), turnDone(3, parentTurn)}
	for name, own := range map[string][]string{
		"totals go on":   {tokens(6, 35000, 1900, 15000, 900), tokens(7, 49000, 2700, 14000, 800)},
		"totals start":   {tokens(6, 15000, 900, 15000, 900), tokens(7, 29000, 1700, 14000, 800)},
		"no last, go on": {tokens(6, 35000, 1900, 0, 0), tokens(7, 49000, 2700, 0, 0)},
	} {
		for _, subFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/sub first %v", ownTurn, name, subFirst), func(t *testing.T) {
				dir := t.TempDir()
				pp := filepath.Join(dir, "rollout-2026-05-23T16-54-00-"+parent+".jsonl")
				sp := filepath.Join(dir, "rollout-2026-05-23T16-54-04-"+sub+".jsonl")
				ingesttest.AppendFile(t, pp, parentLines...)
				lines := append([]string{subMeta}, copied...)
				lines = append(lines, turnCtx(5, ownTurn), turnStart(5, ownTurn), userMsg(5, "look at the tests"))
				lines = append(lines, own...)
				lines = append(lines, turnDone(8, ownTurn))
				ingesttest.AppendFile(t, sp, lines...)
				log, _ := natslogtest.Start(t, natslog.FsyncAlways)
				in, err := NewIngester(IngestConfig{Log: log, Host: "test"})
				if err != nil {
					t.Fatal(err)
				}
				order := []string{pp, sp}
				if subFirst {
					slices.Reverse(order)
				}
				for _, p := range order {
					if _, err := in.ImportFile(t.Context(), p, nil); err != nil {
						t.Fatal(err)
					}
				}
				fold := func(id string) session.State {
					agg := events.Aggregate{Kind: events.KindSession, ID: id}
					recs, _, err := log.Load(t.Context(), agg)
					if err != nil {
						t.Fatal(err)
					}
					return session.Fold(session.Init(agg), recs)
				}
				sum := func(s session.State) (in, out int64) {
					for _, b := range s.Usage {
						in, out = in+b.Input+b.CacheRead+b.CacheWrite, out+b.Output
					}
					return
				}
				ps, ss := fold(parent), fold(sub)
				if in, out := sum(ps); in != 20000 || out != 1000 {
					t.Errorf("parent spent %d/%d, want 20000/1000", in, out)
				}
				if in, out := sum(ss); in != 29000 || out != 1700 {
					t.Errorf("subagent spent %d/%d, want its own 29000/1700", in, out)
				}
				if ss.Parent != parent || ss.AgentType != "explorer" {
					t.Errorf("subagent parent %q type %q, want %s explorer", ss.Parent, ss.AgentType, parent)
				}
				if ss.Turns != 1 {
					t.Errorf("subagent turns %d, want its own 1 (the parent's copied turn is the parent's)", ss.Turns)
				}
				// Its card: a spawned thread at the depth Codex counted,
				// with its own spend only.
				c := session.CardOf(session.Summarize(ss), session.Summarize(ps))
				if c.Kind != session.CardSpawnedThread || c.Depth != 1 || c.Type != "explorer" || c.Turns != 1 || c.Tokens != 29000+1700 || c.Status != session.CardDone {
					t.Errorf("card %+v, want spawned_thread explorer depth 1 done, 1 turn, 30700 tokens", c)
				}
			})
		}
	}
}

// TestImport_SpawnedThreadDepth: a thread a spawned thread spawned
// (thread_spawn depth 2) keeps the depth Codex counted; a depth that is
// not a whole number from 1 up is unknown, and the session counts as a
// subagent of depth 1.
func TestImport_SpawnedThreadDepth(t *testing.T) {
	const (
		parent = "019e7000-0000-7000-8000-000000000002"
		sub    = "019e7100-0000-7000-8000-000000000003"
	)
	for depth, want := range map[string]int{"2": 2, "0": 1, "-1": 1, "1.5": 1, `"2"`: 1} {
		t.Run(depth, func(t *testing.T) {
			sp := filepath.Join(t.TempDir(), "rollout-2026-05-23T16-54-04-"+sub+".jsonl")
			ingesttest.AppendFile(t, sp,
				ev(4, "session_meta", fmt.Sprintf(`{"id":%q,"cwd":"/home/user/p","originator":"codex-tui","cli_version":"0.147.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":%q,"depth":%s,"agent_role":"worker"}}},"thread_source":"subagent"}`, sub, parent, depth)),
				turnCtx(5, "own-turn"), turnStart(5, "own-turn"), userMsg(5, "go deeper"))
			log, _ := natslogtest.Start(t, natslog.FsyncAlways)
			in, err := NewIngester(IngestConfig{Log: log, Host: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := in.ImportFile(t.Context(), sp, nil); err != nil {
				t.Fatal(err)
			}
			agg := events.Aggregate{Kind: events.KindSession, ID: sub}
			recs, _, err := log.Load(t.Context(), agg)
			if err != nil {
				t.Fatal(err)
			}
			s := session.Fold(session.Init(agg), recs)
			if s.Parent != parent || s.Depth != want {
				t.Errorf("parent %q depth %d, want %s and %d", s.Parent, s.Depth, parent, want)
			}
			if c := session.CardOf(session.Summarize(s), session.Summary{ID: parent}); c.Depth != want || c.Status != session.CardRunning {
				t.Errorf("card depth %d status %s, want %d running", c.Depth, c.Status, want)
			}
		})
	}
}
