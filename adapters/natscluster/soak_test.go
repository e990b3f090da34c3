package natscluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/lincheck"
	"github.com/logbook-dev/logbook/events"
)

// kills is how many node kills the soak makes: 2 in `go test ./...`,
// LOGBOOK_CLUSTER_KILLS in .ci/cluster.
func kills(t *testing.T) int { return envCount(t, "LOGBOOK_CLUSTER_KILLS", 2) }

// ack is one acknowledged append of a direct writer.
type ack struct {
	at  time.Time
	ids []ulid.ULID
}

// directWriter appends one-event decisions to aggregates of its own
// through natslog.Log on a writer connection, retrying every failed
// append with the same event ids until it is acknowledged, and records
// each acknowledgement.
type directWriter struct {
	name     string
	log      *natslog.Log
	reg      *events.Registry
	mu       sync.Mutex
	acks     []ack
	appended atomic.Int64 // appends tried (first attempts)
	retries  atomic.Int64
	errs     []string
}

func (w *directWriter) run(ctx context.Context, aggs int) {
	type agg struct {
		a      events.Aggregate
		ver    uint64
		expect uint64
	}
	as := make([]*agg, aggs)
	for i := range as {
		as[i] = &agg{a: events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("soak-%s-%d", w.name, i)}}
	}
	for n := 0; ctx.Err() == nil; n++ {
		g := as[n%len(as)]
		e := lincheck.SessionEvent(w.reg, g.a, g.ver+1, "soak", w.name)
		b := events.Batch{Agg: g.a, Expect: g.expect, Events: []events.Envelope{e}}
		w.appended.Add(1)
		for attempt := 0; ; attempt++ {
			actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			app, err := w.log.Append(actx, b)
			cancel()
			if err == nil {
				w.mu.Lock()
				w.acks = append(w.acks, ack{at: time.Now(), ids: []ulid.ULID{e.ID}})
				w.mu.Unlock()
				g.ver++
				g.expect = app.Last
				break
			}
			if errors.Is(err, events.ErrConflict) || errors.Is(err, events.ErrMalformed) || errors.Is(err, natslog.ErrClosed) {
				w.mu.Lock()
				w.errs = append(w.errs, err.Error())
				w.mu.Unlock()
				return
			}
			w.retries.Add(1)
			if ctx.Err() != nil && attempt > 200 {
				return // given up after the soak: the append is not acknowledged
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// killRecord is one node kill.
type killRecord struct {
	node     string
	leader   bool
	at, back time.Time
	stall    time.Duration
}

// streamLeader returns the stream's leader as the cluster reports it.
func streamLeader(ctx context.Context, js jetstream.JetStream) (string, error) {
	st, err := js.Stream(ctx, natslog.StreamName)
	if err != nil {
		return "", err
	}
	if ci := st.CachedInfo().Cluster; ci != nil && ci.Leader != "" {
		return ci.Leader, nil
	}
	return "", errors.New("no stream leader")
}

// waitReplicas waits until the stream has a leader and every replica is
// current and online.
func waitReplicas(ctx context.Context, js jetstream.JetStream) error {
	for {
		st, err := js.Stream(ctx, natslog.StreamName)
		if err == nil {
			if ci := st.CachedInfo().Cluster; ci != nil && ci.Leader != "" && len(ci.Replicas) == 2 &&
				!slices.ContainsFunc(ci.Replicas, func(p *jetstream.PeerInfo) bool { return !p.Current || p.Offline }) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replicas not current: %v (%w)", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hookLoad runs `logbook hook claude` on h over and over until ctx ends:
// prompts and tool calls of one session, each carrying a marker of its
// own. It returns the markers of the hooks acknowledged (exit 0).
func hookLoad(ctx context.Context, t *testing.T, h *host, sid, ws string) []string {
	var acked []string
	for i := 0; ctx.Err() == nil; i++ {
		marker := fmt.Sprintf("mark-%s-%d", h.name, i)
		base := fmt.Sprintf(`"session_id":%q,"transcript_path":"/t/%s.jsonl","cwd":%q,"permission_mode":"default"`, sid, sid, ws)
		var p string
		if i%2 == 0 {
			p = fmt.Sprintf(`{%s,"hook_event_name":"UserPromptSubmit","prompt":%q}`, base, marker)
		} else {
			p = fmt.Sprintf(`{%s,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":%q,"tool_input":{"command":"true"}}`, base, marker)
		}
		if _, stderr, err := h.cliIn([]byte(p), "hook", "claude"); err != nil {
			t.Errorf("%s hook %d: %v\n%s", h.name, i, err, stderr)
			continue
		}
		acked = append(acked, marker)
	}
	return acked
}

// waitSpool waits until h's spool holds no payload (within the test's
// waitBudget) and logs how long that took.
func waitSpool(t *testing.T, h *host) {
	t.Helper()
	ctx, cancel := waitBudget(t)
	defer cancel()
	start := time.Now()
	for {
		// Entries, not a hook's temporary files (".tmp-…"); filepath.Match
		// negates a class with "^", not "!".
		m, _ := filepath.Glob(filepath.Join(h.data, "spool", "[^.]*.json"))
		if len(m) == 0 {
			t.Logf("%s: spool empty after %s", h.name, time.Since(start).Round(100*time.Millisecond))
			if rej, _ := os.ReadDir(filepath.Join(h.data, "spool", "rejected")); len(rej) > 0 {
				b, _ := os.ReadFile(filepath.Join(h.data, "spool", "rejected", rej[0].Name()))
				t.Errorf("%s: %d hook payloads set aside as rejected; %s: %s", h.name, len(rej), rej[0].Name(), tail(string(b), 600))
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: %d hook payloads still spooled after %s, near the test's deadline", h.name, len(m), time.Since(start).Round(time.Second))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logRecord is what the soak checks of each event in the log.
type logRecord struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Cause *struct {
		Kind string `json:"kind"`
		Ref  string `json:"ref"`
	} `json:"cause"`
	Data json.RawMessage `json:"data"`
}

// readLog reads every event on lb.ev.> as reader, in order, up to the
// last one the stream leader holds. It never trusts a consumer's pending
// count: the consumer may sit on a replica still catching up, whose count
// reaches 0 early.
func readLog(t *testing.T, nc *nats.Conn) []logRecord {
	t.Helper()
	js, _ := jetstream.New(nc)
	ctx, cancel := waitBudget(t)
	defer cancel()
	l, err := natslog.Open(ctx, nc, natslog.Config{Registry: events.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	last, err := l.LastEventSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last == 0 {
		return nil
	}
	c, err := js.OrderedConsumer(ctx, natslog.StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"lb.ev.>"}})
	if err != nil {
		t.Fatal(err)
	}
	var recs []logRecord
	it, err := c.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			t.Fatalf("read log: %v after %d events", err, len(recs))
		}
		var r logRecord
		if err := json.Unmarshal(m.Data(), &r); err != nil {
			t.Fatalf("event %s: %v", m.Subject(), err)
		}
		recs = append(recs, r)
		md, _ := m.Metadata()
		if md.Sequence.Stream >= last {
			return recs
		}
	}
}

// Node kill soak: while both writer hosts take hooks and two direct
// writers append, one nats-server node is killed with SIGKILL (by its
// pid) at random moments — the stream leader every other time — and
// started again. Afterwards every acknowledged append is in the log
// exactly once, none doubled, every decision's observation is there, and
// all hosts' hashes are equal. Each kill's append stall is logged.
func TestNodeKillSoak(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	ws := t.TempDir()
	a, b := e.writers()
	r := e.newHost("reader-c", "reader", "serve", "--role", "reader")
	r.start()
	startSessions(t, a, []string{"soak-hook-a"}, ws)
	startSessions(t, b, []string{"soak-hook-b"}, ws)

	reg := events.NewRegistry()
	var dws []*directWriter
	for i, order := range [][]int{{0, 1, 2}, {2, 1, 0}} {
		l := e.openLog(e.connectURL("writer", e.nodesURL(order), nats.DontRandomize()), reg)
		dws = append(dws, &directWriter{name: fmt.Sprintf("direct%d", i+1), log: l, reg: reg})
	}
	load, stopLoad := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, w := range dws {
		wg.Go(func() { w.run(load, 8) })
	}
	var hookAcks [2][]string
	for i, h := range []*host{a, b} {
		wg.Go(func() { hookAcks[i] = hookLoad(load, t, h, "soak-hook-"+h.name[len(h.name)-1:], ws) })
	}

	js, _ := jetstream.New(e.reader())
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	var rec []killRecord
	n := kills(t)
	for i := range n {
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
		ctx, cancel := waitBudget(t)
		if err := waitReplicas(ctx, js); err != nil {
			cancel()
			t.Fatalf("before kill %d: %v", i+1, err)
		}
		leader, err := streamLeader(ctx, js)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		victim := e.c.Node(leader)
		if i%2 == 1 {
			victim = e.c.Nodes[rng.IntN(len(e.c.Nodes))]
		}
		k := killRecord{node: victim.Name, leader: victim.Name == leader, at: time.Now()}
		victim.Kill()
		time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
		if err := victim.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		if err := victim.WaitHealthy(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		k.back = time.Now()
		cancel()
		rec = append(rec, k)
	}
	time.Sleep(2 * time.Second) // appends go on after the last restart
	stopLoad()
	wg.Wait()

	// Stall per kill: the longest time any direct writer went without an
	// acknowledgement, from the kill to 2 s after the node was back.
	for i := range rec {
		k := &rec[i]
		for _, w := range dws {
			prev := k.at
			for _, a := range w.acks {
				if a.at.Before(k.at) {
					continue
				}
				if a.at.After(k.back.Add(2 * time.Second)) {
					break
				}
				k.stall = max(k.stall, a.at.Sub(prev))
				prev = a.at
			}
		}
	}

	for _, h := range []*host{a, b} {
		waitSpool(t, h)
	}
	final := sameState(t, a, b, r)
	recs := readLog(t, e.reader())

	// Exactly once: every acknowledged direct append once, no event id
	// twice anywhere.
	count := map[string]int{}
	obs := map[string]bool{}
	for _, r := range recs {
		count[r.ID]++
		if strings.HasPrefix(r.Type, "obs.") {
			obs[r.ID] = true
		}
	}
	var appended, acked, lost, doubled int64
	for id, c := range count {
		if c > 1 {
			doubled++
			t.Errorf("event %s is in the log %d times", id, c)
		}
	}
	for _, w := range dws {
		appended += w.appended.Load()
		acked += int64(len(w.acks))
		for _, a := range w.acks {
			for _, id := range a.ids {
				if count[id.String()] == 0 {
					lost++
					t.Errorf("%s: acknowledged event %s is not in the log", w.name, id)
				}
			}
		}
		if len(w.errs) > 0 {
			t.Errorf("%s stopped: %v", w.name, w.errs)
		}
	}
	// Hooks: each acknowledged payload's observation once; every hook
	// decision's observation in the log.
	marks := map[string]int{}
	for _, r := range recs {
		if r.Type == "obs.claude.hook" {
			for _, acks := range hookAcks {
				for _, m := range acks {
					if strings.Contains(string(r.Data), `\"`+m+`\"`) {
						marks[m]++
					}
				}
			}
		}
		if r.Cause != nil && r.Cause.Kind == "hook" && !strings.HasPrefix(r.Type, "obs.") && !obs[r.Cause.Ref] {
			t.Errorf("decision %s (%s) without its observation %s", r.ID, r.Type, r.Cause.Ref)
		}
	}
	var hooksAcked, hooksLost, hooksDoubled int
	for _, acks := range hookAcks {
		for _, m := range acks {
			hooksAcked++
			switch marks[m] {
			case 0:
				hooksLost++
				where := "nowhere in the log"
				for _, r := range recs {
					if strings.Contains(string(r.Data), m+`\"`) {
						where = fmt.Sprintf("in %s %s", r.Type, tail(string(r.Data), 300))
						break
					}
				}
				if hooksLost <= 3 {
					t.Errorf("acknowledged hook %s has no observation in the log; its marker is %s", m, where)
				}
			case 1:
			default:
				hooksDoubled++
				t.Errorf("hook %s observed %d times", m, marks[m])
			}
		}
	}

	var b2 strings.Builder
	fmt.Fprintf(&b2, "\n| kill | node | leader | down | stall (longest gap between acks) |\n| --- | --- | --- | --- | --- |\n")
	var stalls []time.Duration
	for i, k := range rec {
		fmt.Fprintf(&b2, "| %d | %s | %v | %s | %s |\n", i+1, k.node, k.leader, k.back.Sub(k.at).Round(time.Millisecond), k.stall.Round(time.Millisecond))
		stalls = append(stalls, k.stall)
	}
	slices.Sort(stalls)
	fmt.Fprintf(&b2, "kills %d (leader %d); direct appends %d, acknowledged %d, lost %d, doubled %d, retries %d; hooks acknowledged %d, lost %d, doubled %d; events in log %d; stall median %s max %s; hashes equal at seq %d: %s\n",
		len(rec), countLeader(rec), appended, acked, lost, doubled, dws[0].retries.Load()+dws[1].retries.Load(),
		hooksAcked, hooksLost, hooksDoubled, len(recs), stalls[len(stalls)/2].Round(time.Millisecond), stalls[len(stalls)-1].Round(time.Millisecond), final.Seq, final.LiveHash)
	t.Log(b2.String())
	if out := os.Getenv("LOGBOOK_CLUSTER_REPORT"); out != "" {
		_ = os.WriteFile(out, []byte(b2.String()), 0o644)
	}
	if countLeader(rec) == 0 {
		t.Error("no kill hit the stream leader")
	}
	if acked == 0 || hooksAcked == 0 {
		t.Error("nothing acknowledged during the soak")
	}
}

func countLeader(rec []killRecord) int {
	n := 0
	for _, k := range rec {
		if k.leader {
			n++
		}
	}
	return n
}
