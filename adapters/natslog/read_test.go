package natslog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/events"
)

// publishRaw stores data on subject with the test's own JetStream client,
// bypassing Log's validation, and returns its sequence.
func publishRaw(t *testing.T, s *Server, subject, data string) uint64 {
	t.Helper()
	return publishMsg(t, s.Conn(), &nats.Msg{Subject: subject, Data: []byte(data)}, "publish "+subject)
}

// publishMsg publishes m straight to the stream, as a holder of NATS
// credentials can, and returns its stream sequence; what names the
// publish in a failure.
func publishMsg(t *testing.T, nc *nats.Conn, m *nats.Msg, what string) uint64 {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(t.Context(), m)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return ack.Sequence
}

func TestLog_ReadUndecodable(t *testing.T) {
	t.Parallel()
	l, s := newLog(t)
	reg := events.NewRegistry()
	mustAppend(t, l, decision(reg, session("s1"), 0, 1, 1))
	bad := publishRaw(t, s, "lb.ev.session.x",
		`{"id":"01JDQ0000000000000000000AA","type":"foo","v":1,"agg":{"kind":"session","id":"x"},"ver":1,"at":"2026-11-30T10:00:00.000000Z","data":{}}`)
	elsewhere := mustAppend(t, l, decision(reg, session("s2"), 0, 1, 1))
	// A valid envelope of s2 stored on s3's subject.
	b := decision(reg, session("s2"), 0, 1, 1)
	body, err := b.Events[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	misfiled := publishRaw(t, s, "lb.ev.session.s3", string(body))

	var seqs []uint64
	var errs []error
	for r, err := range l.Read(t.Context(), 0) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seqs = append(seqs, r.Seq)
	}
	if want := []uint64{1, elsewhere.First}; fmt.Sprint(seqs) != fmt.Sprint(want) {
		t.Errorf("Read decoded seqs %v, want %v", seqs, want)
	}
	if len(errs) != 2 {
		t.Fatalf("Read errors = %v, want 2", errs)
	}
	var de *DecodeError
	if !errors.As(errs[0], &de) || de.Seq != bad || !errors.Is(errs[0], events.ErrUnknownType) {
		t.Errorf("first error = %v, want *DecodeError at seq %d wrapping ErrUnknownType", errs[0], bad)
	}
	if want := fmt.Sprintf("seq %d (lb.ev.session.x): events: unknown event type", bad); !strings.HasPrefix(errs[0].Error(), want) {
		t.Errorf("first error = %q, want prefix %q", errs[0], want)
	}
	if !errors.As(errs[1], &de) || de.Seq != misfiled || !errors.Is(errs[1], events.ErrMalformed) {
		t.Errorf("second error = %v, want *DecodeError at seq %d wrapping ErrMalformed", errs[1], misfiled)
	}

	// Stopping at the first error stops the read.
	n := 0
	for _, err := range l.Read(t.Context(), 0) {
		n++
		if err != nil {
			break
		}
	}
	if n != 2 {
		t.Errorf("loop that breaks on the first error ran %d times, want 2", n)
	}

	_, _, err = l.Load(t.Context(), session("x"))
	if !errors.As(err, &de) || de.Seq != bad {
		t.Errorf("Load(x) = %v, want *DecodeError at seq %d", err, bad)
	}
}

func TestLog_ReadSkipsOutput(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	ctx := t.Context()
	a := mustAppend(t, l, decision(reg, session("s1"), 0, 1, 1))
	o1, err := l.PublishOutput(ctx, "c7", "c7-1", []byte("hello "))
	if err != nil {
		t.Fatalf("PublishOutput: %v", err)
	}
	if again, err := l.PublishOutput(ctx, "c7", "c7-1", []byte("hello ")); err != nil || again != o1 {
		t.Errorf("PublishOutput again = %d, %v; want the first copy's %d", again, err, o1)
	}
	b := mustAppend(t, l, decision(reg, session("s1"), a.Last, 2, 1))
	o2, err := l.PublishOutput(ctx, "c7", "", []byte("world"))
	if err != nil {
		t.Fatalf("PublishOutput: %v", err)
	}
	if _, err := l.PublishOutput(ctx, "c.7", "", nil); !errors.Is(err, events.ErrMalformed) {
		t.Errorf("PublishOutput(c.7) = %v, want ErrMalformed", err)
	}

	var seqs []uint64
	for _, r := range readAll(t, l, 0) {
		seqs = append(seqs, r.Seq)
	}
	if want := []uint64{a.First, b.First}; fmt.Sprint(seqs) != fmt.Sprint(want) {
		t.Errorf("Read seqs = %v, want %v (events only)", seqs, want)
	}
	// The log ends with output: Read must still end.
	if got := readAll(t, l, b.First+1); len(got) != 0 {
		t.Errorf("Read(%d) = %d records, want none", b.First+1, len(got))
	}

	var out strings.Builder
	var outSeqs []uint64
	for m, err := range l.ReadRaw(ctx, OutputSubject("c7"), 0) {
		if err != nil {
			t.Fatalf("ReadRaw: %v", err)
		}
		out.Write(m.Data)
		outSeqs = append(outSeqs, m.Seq)
	}
	if out.String() != "hello world" || fmt.Sprint(outSeqs) != fmt.Sprint([]uint64{o1, o2}) {
		t.Errorf("ReadRaw(lb.out.c7) = %q at %v, want %q at %v", out.String(), outSeqs, "hello world", []uint64{o1, o2})
	}
}

func TestLog_Follow(t *testing.T) {
	t.Parallel()
	l, _ := newLog(t)
	reg := events.NewRegistry()
	a := mustAppend(t, l, decision(reg, session("s1"), 0, 1, 1))

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got := make(chan events.Record)
	ended := make(chan error, 1)
	go func() {
		for r, err := range l.Follow(ctx, 1) {
			if err != nil {
				ended <- err
				return
			}
			got <- r
		}
		ended <- nil
	}()
	if r := <-got; r.Seq != a.First {
		t.Fatalf("Follow first record seq %d, want %d", r.Seq, a.First)
	}
	if _, err := l.PublishOutput(ctx, "c1", "", []byte("x")); err != nil {
		t.Fatal(err)
	}
	b := decision(reg, session("s1"), a.Last, 2, 1)
	later := mustAppend(t, l, b)
	select {
	case r := <-got:
		if r.Seq != later.First || r.ID != b.Events[0].ID {
			t.Errorf("Follow delivered seq %d id %s, want seq %d id %s", r.Seq, r.ID, later.First, b.Events[0].ID)
		}
	case err := <-ended:
		t.Fatalf("Follow ended early: %v", err)
	case <-ctx.Done():
		t.Fatal("Follow did not deliver the later record")
	}
	cancel()
	if err := <-ended; err != nil {
		t.Errorf("Follow after cancel ended with %v, want no error", err)
	}
}

func TestLog_Reopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := events.NewRegistry()
	b := decision(reg, session("s1"), 0, 1, 3)

	s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	name := s.Name()
	l, err := Open(t.Context(), s.Conn(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	a := mustAppend(t, l, b)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	s2 := startServer(t, dir)
	if s2.Name() != name {
		t.Errorf("server name after restart = %q, want %q", s2.Name(), name)
	}
	l2 := openLog(t, s2)
	recs, last, err := l2.Load(t.Context(), session("s1"))
	if err != nil || len(recs) != 3 || last != a.Last {
		t.Fatalf("Load after restart = %d records, last %d, %v; want 3, %d", len(recs), last, err, a.Last)
	}
	for i, r := range recs {
		if r.ID != b.Events[i].ID {
			t.Errorf("record %d id %s, want %s", i, r.ID, b.Events[i].ID)
		}
	}
	// The dedup state survived too: re-sending is a duplicate.
	again := mustAppend(t, l2, b)
	if !again.Duplicate || again.Last != a.Last {
		t.Errorf("re-Append after restart = %+v, want duplicate of %+v", again, a)
	}
}

func TestOpen_RefusesStream(t *testing.T) {
	t.Parallel()
	good := Config{}.EnsureDefaults().StreamConfig()
	tests := []struct {
		name   string
		change func(*jetstream.StreamConfig)
		fields []string
	}{
		{"deletable", func(c *jetstream.StreamConfig) { c.DenyDelete = false }, []string{"deny_delete"}},
		{"purgeable", func(c *jetstream.StreamConfig) { c.DenyPurge = false }, []string{"deny_purge"}},
		// The server refuses async persistence together with atomic batches.
		{"async persist", func(c *jetstream.StreamConfig) {
			c.PersistMode = jetstream.AsyncPersistMode
			c.AllowAtomicPublish = false
		}, []string{"persist_mode", "allow_atomic"}},
		{"discard old", func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardOld }, []string{"discard"}},
		{"max age", func(c *jetstream.StreamConfig) { c.MaxAge = time.Hour }, []string{"max_age"}},
		{"no atomic", func(c *jetstream.StreamConfig) { c.AllowAtomicPublish = false }, []string{"allow_atomic"}},
		{"subjects", func(c *jetstream.StreamConfig) { c.Subjects = []string{"lb.ev.>"} }, []string{"subjects"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, t.TempDir())
			js, err := jetstream.New(s.Conn())
			if err != nil {
				t.Fatal(err)
			}
			cfg := good
			tt.change(&cfg)
			if _, err := js.CreateStream(t.Context(), cfg); err != nil {
				t.Fatalf("CreateStream: %v", err)
			}
			l, err := Open(t.Context(), s.Conn(), Config{})
			if err == nil {
				l.Close()
			}
			var sce *StreamConfigError
			if !errors.As(err, &sce) {
				t.Fatalf("Open = %v, want *StreamConfigError", err)
			}
			var fields []string
			for _, m := range sce.Mismatches {
				fields = append(fields, m.Field)
			}
			if diff := cmp.Diff(tt.fields, fields); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
			for _, f := range tt.fields {
				if !strings.Contains(err.Error(), f+" is ") {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
		})
	}
	t.Run("good stream is accepted", func(t *testing.T) {
		s := startServer(t, t.TempDir())
		openLog(t, s)
		openLog(t, s) // second Open finds it
	})
}

func TestStartEmbedded_Listen(t *testing.T) {
	t.Parallel()
	pass := NewPassword()
	s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", User: "logbook", Password: pass})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	url := s.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":-1") || strings.HasSuffix(url, ":0") {
		t.Fatalf("ClientURL = %q, want a bound loopback port", url)
	}
	for _, opts := range [][]nats.Option{nil, {nats.UserInfo("logbook", "wrong")}} {
		if nc, err := Connect(url, append(opts, nats.MaxReconnects(0))...); err == nil {
			nc.Close()
			t.Errorf("Connect without the password succeeded")
		}
	}
	nc, err := Connect(url, nats.UserInfo("logbook", pass))
	if err != nil {
		t.Fatalf("Connect with the password: %v", err)
	}
	defer nc.Close()
	l, err := Open(t.Context(), nc, Config{})
	if err != nil {
		t.Fatalf("Open over TCP: %v", err)
	}
	defer l.Close()
	mustAppend(t, l, decision(events.NewRegistry(), session("s1"), 0, 1, 1))
	// The in-process connection carries the credentials too.
	l2 := openLog(t, s)
	if recs, _, err := l2.Load(t.Context(), session("s1")); err != nil || len(recs) != 1 {
		t.Errorf("Load in process = %d records, %v; want 1", len(recs), err)
	}
}

func TestEmbeddedConfig_Validate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  EmbeddedConfig
		want string // part of the error; "" means valid
	}{
		{"minimal", EmbeddedConfig{StoreDir: "d"}, ""},
		{"interval", EmbeddedConfig{StoreDir: "d", Fsync: FsyncInterval}, ""},
		{"no store dir", EmbeddedConfig{}, "empty StoreDir"},
		{"interval without mode", EmbeddedConfig{StoreDir: "d", SyncInterval: time.Second}, "needs Fsync interval"},
		{"public listener", EmbeddedConfig{StoreDir: "d", Listen: "0.0.0.0:4222", User: "u", Password: "p"}, "not loopback"},
		{"listener without password", EmbeddedConfig{StoreDir: "d", Listen: "127.0.0.1:0"}, "User and Password, or Users, are required"},
		{"user without password", EmbeddedConfig{StoreDir: "d", User: "u"}, "both User and Password"},
		{"roles", EmbeddedConfig{StoreDir: "d", Listen: "127.0.0.1:0", Users: []User{{Name: "r", Password: "p", Role: RoleReader}}}, ""},
		{"user and roles", EmbeddedConfig{StoreDir: "d", User: "u", Password: "p", Users: []User{{Name: "r", Password: "p", Role: RoleReader}}}, "not both"},
		{"role user twice", EmbeddedConfig{StoreDir: "d", Users: []User{{Name: "r", Password: "p", Role: RoleReader}, {Name: "r", Password: "q", Role: RoleWriter}}}, `user "r" twice`},
		{"unknown role", EmbeddedConfig{StoreDir: "d", Users: []User{{Name: "r", Password: "p", Role: "root"}}}, `role "root"`},
		{"role user without password", EmbeddedConfig{StoreDir: "d", Users: []User{{Name: "r", Role: RoleReader}}}, "empty name or password"},
		{"follower with id", EmbeddedConfig{StoreDir: "d", Users: []User{{Name: "f", Password: "p", Role: RoleFollower, FollowerID: "0a1b2c3d4e5f"}}}, ""},
		{"follower id wildcard", EmbeddedConfig{StoreDir: "d", Users: []User{{Name: "f", Password: "p", Role: RoleFollower, FollowerID: "*"}}}, `follower id "*"`},
		{"follower id of many tokens", EmbeddedConfig{StoreDir: "d", Users: []User{{Name: "f", Password: "p", Role: RoleFollower, FollowerID: "0a1b2c.3d4e5"}}}, "12 lowercase hex digits"},
		{"reader with a follower id", EmbeddedConfig{StoreDir: "d", Users: []User{{Name: "r", Password: "p", Role: RoleReader, FollowerID: "0a1b2c3d4e5f"}}}, "only a follower has one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" && err != nil || tt.want != "" && !strings.Contains(fmt.Sprint(err), tt.want) {
				t.Errorf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := StartEmbedded(t.Context(), EmbeddedConfig{}); err == nil {
		t.Error("StartEmbedded with empty StoreDir succeeded")
	}
}

func TestServer_Durability(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir())
	if got := s.Durability(); !strings.HasPrefix(got, "fsync always") {
		t.Errorf("default Durability = %q, want fsync always", got)
	}
	cfg := EmbeddedConfig{StoreDir: t.TempDir(), Fsync: FsyncInterval}
	s2, err := StartEmbedded(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown()
	if got := s2.Durability(); !strings.Contains(got, "every 1s") || !strings.Contains(got, "can be lost") {
		t.Errorf("interval Durability = %q, want the 1s window and the risk", got)
	}
}
