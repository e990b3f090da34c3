package api

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// pageNext reads a sessions page's head as every version writes it: next
// and rows first, then a Stale's fields (read) and any other field
// (passed over) up to the rows; a field before next and rows is refused.
func TestPageNext(t *testing.T) {
	since := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name      string
		raw       string
		next      string
		rows      int
		stale     Stale
		wantError bool
	}{
		{name: "OldServer", raw: `{"next":"b","rows":2,"sessions":[{},{}]}`, next: "b", rows: 2},
		{name: "Stale", raw: `{"next":"","rows":1,"log_unavailable_since":"2026-12-02T06:00:00Z","as_of_seq":42,"log_error":"no leader","sessions":[{}]}`,
			rows: 1, stale: Stale{LogUnavailableSince: &since, AsOfSeq: 42, LogError: "no leader"}},
		{name: "AppendsPaused", raw: `{"next":"","rows":1,"appends_paused_since":"2026-12-02T06:00:00Z","hooks_waiting":3,"as_of_seq":42,"log_error":"disk full","sessions":[{}]}`,
			rows: 1, stale: Stale{AppendsPausedSince: &since, HooksWaiting: 3, AsOfSeq: 42, LogError: "disk full"}},
		{name: "LaterField", raw: `{"next":"c","rows":1,"shard":{"a":[1,2]},"as_of_seq":7,"sessions":[{}]}`, next: "c", rows: 1, stale: Stale{AsOfSeq: 7}},
		{name: "FieldFirst", raw: `{"as_of_seq":7,"next":"","rows":0,"sessions":[]}`, wantError: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			next, n, stale, err := pageNext([]byte(c.raw), 10)
			if c.wantError {
				if err == nil {
					t.Fatalf("pageNext(%s) = %q, %d; want an error", c.raw, next, n)
				}
				return
			}
			if err != nil || next != c.next || n != 10+c.rows {
				t.Fatalf("pageNext(%s) = %q, %d, %v; want %q, %d", c.raw, next, n, err, c.next, 10+c.rows)
			}
			got, _ := json.Marshal(stale)
			want, _ := json.Marshal(c.stale)
			if !bytes.Equal(got, want) {
				t.Errorf("stale %s, want %s", got, want)
			}
		})
	}
}

// A stale answer's line says why it is stale: the log not answering, or
// appends paused with hook payloads waiting in serve's journal and in
// the data dir's spool.
func TestStale_Text(t *testing.T) {
	since := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	now := since.Add(42 * time.Second)
	for _, c := range []struct {
		st   Stale
		want string
	}{
		{Stale{}, ""},
		{Stale{LogUnavailableSince: &since, AsOfSeq: 7, LogError: "no leader"},
			"log unavailable since 2026-12-02T06:00:00Z (42s): showing the projection as of sequence 7 (no leader)"},
		{Stale{AppendsPausedSince: &since, AsOfSeq: 7, LogError: "disk full since 2026-12-02T06:00:00Z (/d: 0 bytes free)"},
			"appends paused since 2026-12-02T06:00:00Z (42s): showing the projection as of sequence 7 (disk full since 2026-12-02T06:00:00Z (/d: 0 bytes free))"},
		{Stale{AppendsPausedSince: &since, HooksWaiting: 1, AsOfSeq: 7},
			"appends paused since 2026-12-02T06:00:00Z (42s): 1 hook payload serve took waits in its journal, not shown; showing the projection as of sequence 7"},
		{Stale{AppendsPausedSince: &since, HooksWaiting: 3, AsOfSeq: 7},
			"appends paused since 2026-12-02T06:00:00Z (42s): 3 hook payloads serve took wait in its journal, not shown; showing the projection as of sequence 7"},
		{Stale{AppendsPausedSince: &since, HooksWaiting: 3, HooksSpooled: 2, AsOfSeq: 7},
			"appends paused since 2026-12-02T06:00:00Z (42s): 3 hook payloads serve took wait in its journal, not shown; 2 more wait in the spool, not yet taken; showing the projection as of sequence 7"},
		{Stale{AppendsPausedSince: &since, HooksSpooled: 1, AsOfSeq: 7},
			"appends paused since 2026-12-02T06:00:00Z (42s): 1 hook payload waits in the spool, not yet taken by serve; showing the projection as of sequence 7"},
	} {
		if got := c.st.Text(now); got != c.want {
			t.Errorf("Text = %q\nwant %q", got, c.want)
		}
		if got := c.st.IsStale(); got != (c.want != "") {
			t.Errorf("IsStale of %+v = %v", c.st, got)
		}
	}
}

// A sessions page read stale keeps the head an older client reads (next
// and rows first) and decodes into the older page; a read that does not
// allow it (the gate's, the reconciler's, an older client's) waits for
// the projection as before, however unavailable LogState says the log is,
// and its page carries no Stale. AllowStale reaches the handler through
// Call and Serve.
func TestService_StaleReads(t *testing.T) {
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown() })
	l, err := natslog.Open(t.Context(), srv.Conn(), natslog.Config{Registry: events.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	store, err := projections.Open(t.TempDir()+"/views", projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	since := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	s := &Service{Log: l, Store: store, pageBytes: 1 << 20, LogState: func() (time.Time, string) { return since, "no leader" }}

	page := func(ctx context.Context) []byte {
		t.Helper()
		v, err := s.Sessions(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return v.(Encoded)
	}
	stale := page(AllowStale(t.Context()))
	if !bytes.HasPrefix(stale, []byte(`{"next":"","rows":0,"log_unavailable_since":`)) {
		t.Errorf("stale page %s: want next, rows, then the stale fields", stale)
	}
	var old struct {
		Next     string            `json:"next"`
		Rows     int               `json:"rows"`
		Sessions []json.RawMessage `json:"sessions"`
	}
	if err := json.Unmarshal(stale, &old); err != nil || old.Sessions == nil {
		t.Errorf("an older client reads the stale page as %+v, %v", old, err)
	}
	if st := PageStale(stale); !st.IsStale() || !st.LogUnavailableSince.Equal(since) || st.LogError != "no leader" {
		t.Errorf("PageStale = %+v, want since %s", st, since)
	}
	if strict := page(t.Context()); string(strict) != `{"next":"","rows":0,"sessions":[]}` {
		t.Errorf("page not allowed to be stale: %s", strict)
	}

	// The flag crosses the wire as a header.
	sub, err := Serve(srv.Conn(), "test.flag", func(ctx context.Context, _ []byte) (any, error) {
		return staleAllowed(ctx), nil
	}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	nc, err := srv.Connect(nats.Name("client"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	for _, allow := range []bool{false, true} {
		ctx := t.Context()
		if allow {
			ctx = AllowStale(ctx)
		}
		var got bool
		if err := Call(ctx, nc, "test.", "flag", struct{}{}, &got); err != nil || got != allow {
			t.Errorf("Call with AllowStale %v: the handler saw %v, %v", allow, got, err)
		}
	}
}
