package worker

import (
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// Watches a hub serves read every command's output and end from the
// hub's one consumer: no consumer is made per watch. A hub that stops
// while a watch reads leaves it to read on with one of its own, from
// where it was: the output whole, none of it twice.
func TestWatchHub(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	hub := NewWatchHub(e.srv.Conn())
	cl, err := NewClient(ClientConfig{Conn: e.srv.Conn(), Log: e.log, Reg: e.reg, Actor: "test", DeleteAfter: true, Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	run := func(fn func(Chunk), argv ...string) (command.State, string) {
		t.Helper()
		id := ulid.Make().String()
		cl.PrepareWatch(t.Context(), id)
		if _, err := cl.Request(t.Context(), id, e.request(events.ModeFullAccess, argv...), nil); err != nil {
			cl.DropWatch(t.Context(), id)
			t.Fatal(err)
		}
		var out strings.Builder
		st, err := cl.Watch(t.Context(), id, WatchOptions{Follow: true}, func(c Chunk) error {
			out.Write(c.Data)
			if fn != nil {
				fn(c)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return st, out.String()
	}

	run(nil, "true") // the hub's consumer is made
	before := e.consumers()
	for i := range 5 {
		st, out := run(nil, "sh", "-c", "echo one; echo two >&2; exit 3")
		if st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 3 || out != "one\ntwo\n" && out != "two\none\n" {
			t.Fatalf("watch %d: status %s exit %v output %q", i, st.Status, st.ExitCode, out)
		}
	}
	if after := e.consumers(); after > before {
		t.Errorf("consumers: %d before five watches on the hub, %d after; want none made", before, after)
	}
	hub.mu.Lock()
	left := len(hub.routes)
	hub.mu.Unlock()
	if left != 0 {
		t.Errorf("%d routes left on the hub after the watches", left)
	}

	// Two watches of one command each read all of it.
	cl2, err := NewClient(ClientConfig{Conn: e.srv.Conn(), Log: e.log, Reg: e.reg, Actor: "test", DeleteAfter: true, Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	cl2.PrepareWatch(t.Context(), id)
	other := make(chan string, 1)
	go func() {
		var out strings.Builder
		_, err := cl2.Watch(t.Context(), id, WatchOptions{Follow: true}, func(c Chunk) error { out.Write(c.Data); return nil })
		if err != nil {
			out.WriteString(err.Error())
		}
		other <- out.String()
	}()
	cl.PrepareWatch(t.Context(), id)
	if _, err := cl.Request(t.Context(), id, e.request(events.ModeFullAccess, "echo", "both"), nil); err != nil {
		t.Fatal(err)
	}
	var both strings.Builder
	if _, err := cl.Watch(t.Context(), id, WatchOptions{Follow: true}, func(c Chunk) error { both.Write(c.Data); return nil }); err != nil {
		t.Fatal(err)
	}
	if got, got2 := both.String(), <-other; got != "both\n" || got2 != "both\n" {
		t.Errorf("two watches of one command: %q and %q; want both whole", got, got2)
	}

	// The hub stops after the first chunk: the rest is read on the
	// watch's own consumer.
	stopped := false
	st, out := run(func(Chunk) {
		if !stopped {
			stopped = true
			hub.fail()
		}
	}, "sh", "-c", "echo first; sleep 0.3; echo second; sleep 0.3; echo third")
	if !stopped || st.Status != command.StatusExited || out != "first\nsecond\nthird\n" {
		t.Fatalf("after the hub stopped: status %s output %q", st.Status, out)
	}
	// A stopped hub serves no more watches: they make their own.
	if st, out := run(nil, "echo", "again"); st.Status != command.StatusExited || out != "again\n" {
		t.Fatalf("after the hub stopped: status %s output %q", st.Status, out)
	}
}

// A watch that does not read while its command's messages arrive holds
// at most the hub's bound: past it the hub drops the route, and the
// watch, when it reads at last, reads the command whole on a consumer
// of its own.
func TestWatchHub_SlowWatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	hub := NewWatchHub(e.srv.Conn())
	hub.max = 4
	cl, err := NewClient(ClientConfig{Conn: e.srv.Conn(), Log: e.log, Reg: e.reg, Actor: "test", DeleteAfter: true, Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	id := ulid.Make().String()
	cl.PrepareWatch(t.Context(), id)
	v, _ := cl.prepared.Load(id)
	r := v.(*preparedWatch).route
	if r == nil {
		t.Fatal("the hub did not serve the watch")
	}
	if _, err := cl.Request(t.Context(), id, e.request(events.ModeFullAccess, "sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo line$i; sleep 0.05; done"), nil); err != nil {
		cl.DropWatch(t.Context(), id)
		t.Fatal(err)
	}
	// Not read until the command has ended: every message of it has
	// reached the hub by then (it reads in stream order, and the end
	// is the command's last event).
	e.waitFor("the command's end", func() bool {
		st, err := cl.Command(t.Context(), id)
		return err == nil && st.Ended()
	})
	probe := ulid.Make().String()
	cl.PrepareWatch(t.Context(), probe)
	if _, err := cl.Request(t.Context(), probe, e.request(events.ModeFullAccess, "true"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Watch(t.Context(), probe, WatchOptions{Follow: true}, func(Chunk) error { return nil }); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	held, stopped := len(r.q), r.stopped
	r.mu.Unlock()
	hub.mu.Lock()
	routed := len(hub.routes[id])
	hub.mu.Unlock()
	if held > hub.max || !stopped || routed != 0 {
		t.Errorf("a watch that does not read: %d messages held (bound %d), stopped %v, %d routes left; want none held, stopped, no route", held, hub.max, stopped, routed)
	}
	var out strings.Builder
	st, err := cl.Watch(t.Context(), id, WatchOptions{Follow: true}, func(c Chunk) error { out.Write(c.Data); return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := "line1\nline2\nline3\nline4\nline5\nline6\nline7\nline8\n"
	if st.Status != command.StatusExited || strings.ReplaceAll(out.String(), "\r\n", "\n") != want {
		t.Errorf("the slow watch read: status %s output %q; want exited, %q", st.Status, out.String(), want)
	}
}

// A wait of 0 (exec --wait 0) reads what is stored and leaves the
// command in the background: the route PrepareWatch registered on the
// hub is removed all the same, as is one dropped after a failed request.
func TestWatchHub_NoWait(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	hub := NewWatchHub(e.srv.Conn())
	cl, err := NewClient(ClientConfig{Conn: e.srv.Conn(), Log: e.log, Reg: e.reg, Actor: "test", DeleteAfter: true, Hub: hub})
	if err != nil {
		t.Fatal(err)
	}
	routes := func() int {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		return len(hub.routes)
	}
	id := ulid.Make().String()
	cl.PrepareWatch(t.Context(), id)
	if routes() != 1 {
		t.Fatalf("%d routes after PrepareWatch; want 1", routes())
	}
	if _, err := cl.Request(t.Context(), id, e.request(events.ModeFullAccess, "sleep", "30"), nil); err != nil {
		cl.DropWatch(t.Context(), id)
		t.Fatal(err)
	}
	res, err := cl.Wait(t.Context(), id, 0, func(Chunk) error { return nil })
	if err != nil || !res.Background {
		t.Fatalf("wait 0: background %v, err %v; want the command in the background", res.Background, err)
	}
	if n := routes(); n != 0 {
		t.Errorf("%d routes left after a wait of 0; want none", n)
	}
	if err := cl.Stop(t.Context(), id, "test", "done"); err != nil {
		t.Fatal(err)
	}

	dropped := ulid.Make().String()
	cl.PrepareWatch(t.Context(), dropped)
	cl.DropWatch(t.Context(), dropped)
	if n := routes(); n != 0 {
		t.Errorf("%d routes left after DropWatch; want none", n)
	}
}
