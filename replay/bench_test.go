package replay_test

// BenchmarkReplay folds a whole log into memory — every session's state,
// through the strict decoder and the session reducer — against a bare
// ordered consumer reading the same messages on the same server in the
// same iteration (no decoding). The floor is fold/raw ≥ 0.80.
//
//	go test -run '^$' -bench Replay -benchtime 3x -count 5 ./replay/
//
// LOGBOOK_BENCH_EVENTS sets the log's size (default 1,000,000; the
// setup appends them once, under fsync interval, before timing).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/logbook-dev/logbook/replay"
)

func BenchmarkReplay(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("LOGBOOK_BENCH_EVENTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	ctx := b.Context()
	srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{StoreDir: b.TempDir(), Fsync: natslog.FsyncInterval})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	log, err := natslog.Open(ctx, srv.Conn(), natslog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		b.Fatal(err)
	}
	fill(b, js, n)

	var raw, fold time.Duration
	for b.Loop() {
		t := time.Now()
		if got := rawCount(b, js); got != n {
			b.Fatalf("raw read %d, want %d", got, n)
		}
		raw += time.Since(t)
		t = time.Now()
		states := map[string]*session.State{}
		count := 0
		_, _, err := replay.Fold(log.Read(ctx, 1), states, func(m map[string]*session.State, e events.Envelope) map[string]*session.State {
			count++
			session.EvolveIn(m, e)
			return m
		})
		if err != nil || count != n {
			b.Fatalf("fold: %d events, %v", count, err)
		}
		fold += time.Since(t)
	}
	k := float64(b.N)
	b.ReportMetric(float64(n)*k/fold.Seconds(), "fold-ev/s")
	b.ReportMetric(float64(n)*k/raw.Seconds(), "raw-ev/s")
	b.ReportMetric(raw.Seconds()/fold.Seconds(), "fold/raw")
}

// fill publishes n session events (1,000 sessions, activity changes after
// a start) as raw messages, 1,000 per atomic batch.
func fill(b *testing.B, js jetstream.JetStream, n int) {
	reg := events.NewRegistry()
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	ver := map[int]uint64{}
	var batch []*nats.Msg
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := jetstreamext.PublishMsgBatch(b.Context(), js, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		sid := i % 1000
		ver[sid]++
		var p events.Payload = events.SessionActivityChanged{From: "thinking", To: fmt.Sprintf("tool:Bash-%d", i)}
		if ver[sid] == 1 {
			p = events.SessionStarted{Agent: "claude-code", Cwd: "/home/user/project", Model: "claude-opus-4-7"}
		}
		e := reg.New(p)
		e.ID, e.Agg, e.Ver, e.At = ulid.Make(), events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("s-%04d", sid)}, ver[sid], at
		e.Cause = &events.Cause{Kind: "hook", Event: "PreToolUse", Detail: "Bash", Ref: e.ID.String()}
		data, err := json.Marshal(e)
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(e.Agg.Subject())
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, e.ID.String())
		batch = append(batch, m)
		if len(batch) == 1000 {
			flush()
		}
	}
	flush()
}

// rawCount reads every message with a bare ordered consumer pulling as
// the log's reader does (natslog.ReadPull).
func rawCount(b *testing.B, js jetstream.JetStream) int {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	st, err := js.Stream(ctx, natslog.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	last := info.State.LastSeq
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"lb.ev.>"}})
	if err != nil {
		b.Fatal(err)
	}
	it, err := c.Messages(natslog.ReadPull(js.Conn().MaxPayload()))
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	n := 0
	for {
		m, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		n++
		md, _ := m.Metadata()
		if md.Sequence.Stream >= last {
			return n
		}
	}
}
