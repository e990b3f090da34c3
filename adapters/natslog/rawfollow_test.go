package natslog

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/events"
)

// TestFollowRaw_ServerRestart follows the log over a raw connection
// while the server under it is stopped and started again on the same
// store and port: every message appended before, between and after
// comes once, in order, with its judged headers.
func TestFollowRaw_ServerRestart(t *testing.T) {
	t.Parallel()
	dir, pass := t.TempDir(), NewPassword()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := func() *Server {
		s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: dir, Listen: addr, User: "logbook", Password: pass})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	defer func() { s.Shutdown() }()
	nc, err := Connect(s.ClientURL(), nats.UserInfo("logbook", pass), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	l, err := Open(t.Context(), nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reg := events.NewRegistry()
	var want []uint64
	appendOne := func(ver uint64) {
		t.Helper()
		// The first appends after the restart may find the stream not
		// yet ready: asked again with the same event ids until it is.
		b := decision(reg, session("s1"), ver-1, ver, 1)
		for try := 0; ; try++ {
			a, err := l.Append(t.Context(), b)
			if err == nil {
				want = append(want, a.First)
				return
			}
			if try == 10 {
				t.Fatalf("Append(%s, expect %d): %v", b.Agg, b.Expect, err)
			}
		}
	}
	appendOne(1)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	got := make(chan Msg)
	ended := make(chan error, 1)
	go func() {
		for m, err := range l.FollowRaw(ctx, eventFilter, 1) {
			if err != nil {
				ended <- err
				return
			}
			got <- m
		}
		ended <- nil
	}()
	next := func(i int) {
		t.Helper()
		select {
		case m := <-got:
			if m.Seq != want[i] {
				t.Fatalf("message %d: seq %d, want %d", i, m.Seq, want[i])
			}
			if m.Header.Get("Lb-Type") == "" || m.Header.Get("Nats-Msg-Id") != "" {
				t.Errorf("message %d: header %v, want the judged headers alone", i, m.Header)
			}
		case err := <-ended:
			t.Fatalf("FollowRaw ended before message %d: %v", i, err)
		case <-ctx.Done():
			t.Fatalf("FollowRaw did not deliver message %d (seq %d)", i, want[i])
		}
	}
	next(0)
	appendOne(2)
	next(1)

	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	s = start()
	// Appended once the connection is back; the follower is told of
	// nothing in between.
	for nc.Status() != nats.CONNECTED {
		select {
		case <-ctx.Done():
			t.Fatal("no reconnection")
		case <-time.After(10 * time.Millisecond):
		}
	}
	appendOne(3)
	appendOne(4)
	next(2)
	next(3)
	select {
	case m := <-got:
		t.Fatalf("FollowRaw delivered seq %d more", m.Seq)
	case err := <-ended:
		t.Fatalf("FollowRaw ended: %v", err)
	default:
	}
	cancel()
	if err := <-ended; err != nil {
		t.Errorf("FollowRaw after cancel ended with %v, want no error", err)
	}
}

// TestFollow_NewAggregateJudgedAsFromStart: a signed log followed from
// its end meets a new aggregate's first event (stored on an empty
// subject, so its order state before is the empty one, not loaded) and
// the ones after it live, and judges each as a read from the start does.
func TestFollow_NewAggregateJudgedAsFromStart(t *testing.T) {
	t.Parallel()
	writer := mustKey(t, "writer@h", attestation.RoleServe)
	s, admin, l := startSigning(t, writer)
	l.SetSigner(writer)
	reg := events.NewRegistry()
	mustAppend(t, l, decision(reg, session("a"), 0, 1, 2))
	from := lastSeq(t, l) + 1

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ctx = events.WithQuarantined(ctx)
	got := make(chan events.Record)
	go func() {
		defer close(got)
		for r, err := range signedLog(t, s, admin).Follow(ctx, from) {
			if err != nil {
				t.Error(err)
				return
			}
			got <- r
		}
	}()
	b := session("b")
	first := mustAppend(t, l, decision(reg, b, 0, 1, 1))
	second := mustAppend(t, l, decision(reg, b, first.Last, 2, 3))
	var live []events.Record
	for len(live) < 4 {
		select {
		case r, ok := <-got:
			if !ok {
				t.Fatal("Follow ended")
			}
			live = append(live, r)
		case <-ctx.Done():
			t.Fatalf("Follow delivered %d of 4 events", len(live))
		}
	}
	cancel()
	var whole []events.Record
	for _, r := range readAll(t, signedLog(t, s, admin), 1) {
		if r.Agg == b {
			whole = append(whole, r)
		}
	}
	if len(whole) != 4 || live[3].Seq != second.Last {
		t.Fatalf("Read from 1 has %d events of %s, Follow ended at seq %d; want 4 and seq %d", len(whole), b, live[3].Seq, second.Last)
	}
	for i, r := range live {
		w := whole[i]
		if r.Seq != w.Seq || r.Quarantined || r.Signer != w.Signer || r.Signer.Status != "attested" || r.Ver != uint64(i+1) {
			t.Errorf("Follow event %d: seq %d ver %d signer %q quarantined %v; Read from 1: seq %d signer %q", i, r.Seq, r.Ver, r.Signer, r.Quarantined, w.Seq, w.Signer)
		}
	}
}
