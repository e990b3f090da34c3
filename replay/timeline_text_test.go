package replay_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// TestWriteText_ClockBack: an item decided from a transcript line earlier
// than such an item before it says the agent's clock went back, and by
// how much; items of other clocks (a workspace's, a task's) are not
// compared with them; times print in UTC whatever zone they came in.
func TestWriteText_ClockBack(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 5, 0, time.FixedZone("CEST", 2*3600))
	obs := &replay.ObsRef{ID: "o", Type: "obs.claude.line", Kind: "user", Line: 3}
	items := []replay.Item{
		{Seq: 1, At: t0, Type: "session.started", Obs: obs},
		{Seq: 2, At: t0.Add(-3 * time.Second), Type: "session.transitioned", From: "ready", To: "working", Obs: obs},
		{Seq: 3, At: t0.Add(time.Second), Type: "session.transitioned", From: "working", To: "ready", Obs: obs},
		{Seq: 4, At: t0.Add(2 * time.Second), Type: "workspace.synced"},
		{Seq: 5, At: t0.Add(1500 * time.Millisecond), Type: "task.running", Entry: "task-t1"},
	}
	var b bytes.Buffer
	if err := replay.WriteText(&b, items); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.HasPrefix(lines[0], "#1 2026-05-01T08:00:05.000000Z ") {
		t.Errorf("first line %q, want its time in UTC", lines[0])
	}
	if !strings.Contains(lines[1], "(agent clock went back 3s)") {
		t.Errorf("second line %q, want a note that the clock went back 3s", lines[1])
	}
	if strings.Contains(lines[2], "clock") {
		t.Errorf("third line %q: the clock went forward", lines[2])
	}
	if strings.Contains(lines[4], "clock") {
		t.Errorf("fifth line %q: a task's time is not the agent's clock", lines[4])
	}
}

// TestWriteText_ServerClockNotCompared: items from observations the
// server dated as it received them (a hook, a Codex notification) or made
// (a reconciler's tick) are of the server's clock, not the agent's: a
// transcript line dated before them (as every line of an older turn is,
// imported after a stale mark, or after its own turn's hooks) is no clock
// going back, and they are not compared with the lines around them.
func TestWriteText_ServerClockNotCompared(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	line := func(n int) *replay.ObsRef {
		return &replay.ObsRef{ID: "l", Type: "obs.claude.line", Kind: "assistant", Line: n}
	}
	items := []replay.Item{
		{Seq: 1, At: t0, Type: "session.started", Obs: line(1)},
		{Seq: 2, At: t0.Add(time.Hour), Type: "session.transitioned", Obs: &replay.ObsRef{ID: "h", Type: "obs.claude.hook", Kind: "UserPromptSubmit", Key: "hook:1"}},
		{Seq: 3, At: t0.Add(26 * time.Hour), Type: "session.entry_abandoned", Obs: &replay.ObsRef{ID: "t", Type: "obs.reconciler.tick", Kind: "tick", Key: "tick:1"}},
		{Seq: 4, At: t0.Add(3 * time.Second), Type: "session.entry_late_result", Obs: line(2)},
		{Seq: 5, At: t0.Add(4 * time.Second), Type: "session.transitioned", Obs: line(3)},
		{Seq: 6, At: t0.Add(2 * time.Second), Type: "session.transitioned", Obs: line(4)},
	}
	var b bytes.Buffer
	if err := replay.WriteText(&b, items); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, l := range lines[:5] {
		if strings.Contains(l, "clock went back") {
			t.Errorf("line %d %q: compared with the server's clock", i+1, l)
		}
	}
	if !strings.Contains(lines[5], "(agent clock went back 2s)") {
		t.Errorf("last line %q, want the agent's clock gone back 2s from its line before", lines[5])
	}
}

// TestTextWriter_Parts: a timeline written in parts through one
// TextWriter is WriteText's text of the whole, byte for byte, at every
// cut: the agent clock that went back between two parts says so.
func TestTextWriter_Parts(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 5, 0, time.UTC)
	obs := &replay.ObsRef{ID: "o", Type: "obs.claude.line", Kind: "user", Line: 1}
	var items []replay.Item
	for i := range 40 {
		it := replay.Item{Seq: uint64(i + 1), At: t0.Add(time.Duration(i%7-i%3) * time.Second), Type: "session.transitioned", From: "ready", To: "working"}
		if i%5 != 4 {
			it.Obs = obs
		}
		items = append(items, it)
	}
	var whole bytes.Buffer
	if err := replay.WriteText(&whole, items); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(whole.String(), "clock went back") {
		t.Fatal("no clock went back in the whole: the test proves nothing")
	}
	for cut := range len(items) + 1 {
		for step := 1; step <= 3; step++ {
			var b bytes.Buffer
			tw := replay.TextWriter{W: &b}
			parts := [][]replay.Item{items[:cut]}
			for i := cut; i < len(items); i += step {
				parts = append(parts, items[i:min(i+step, len(items))])
			}
			for _, p := range parts {
				if err := tw.Write(p); err != nil {
					t.Fatal(err)
				}
			}
			if b.String() != whole.String() {
				t.Fatalf("cut at %d, then parts of %d: the text differs from WriteText's\n got: %q\nwant: %q", cut, step, b.String(), whole.String())
			}
		}
	}
}

// TestWriteText_Times: every time prints as events.TimeFormat lays it
// out in UTC, to the microsecond (truncated), the years before 0 and
// after 9999 too; the zero time, which only an event that does not
// decode has, as "(no time)".
func TestWriteText_Times(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 12, 3, 17, 4, 5, 123456789, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 999, time.FixedZone("X", -7*3600)),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2000, 2, 29, 12, 30, 0, 1000, time.FixedZone("Y", 5*3600+1800)),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 15, 1, 2, 3, 4000, time.UTC),
		time.Unix(0, 0),
	}
	for ns := int64(1); ns < 1<<62; ns = ns*7 + 12345 {
		times = append(times, time.Unix(0, ns), time.Unix(ns/1e9, ns%1e9).In(time.FixedZone("Z", int(ns%86400))))
	}
	for _, at := range times {
		var b bytes.Buffer
		if err := replay.WriteText(&b, []replay.Item{{Seq: 1, At: at, Type: "x"}}); err != nil {
			t.Fatal(err)
		}
		if got, want := b.String(), "#1 "+at.UTC().Format(events.TimeFormat)+" x\n"; got != want {
			t.Errorf("time %v: got %q, want %q", at, got, want)
		}
	}
	var b bytes.Buffer
	if err := replay.WriteText(&b, []replay.Item{{Seq: 1, Type: "x"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "#1 (no time) x\n"; got != want {
		t.Errorf("the zero time: got %q, want %q", got, want)
	}
}

// TestTextWriter_Signers writes items whose signers change from one to
// the next, an unattested item and unsigned ones among them, through
// one TextWriter: each line says its own item's signer, as the item
// written alone says it.
func TestTextWriter_Signers(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 5, 0, time.UTC)
	a := replay.Item{Signed: "uid0@vm/writer", KeyID: "0f88a777813ee0ce", Principal: "uid0@vm", Role: "writer"}
	b := replay.Item{Signed: "serve@vm/serve", KeyID: "1a2b3c4d5e6f7081", Principal: "serve@vm", Role: "serve"}
	raw := replay.Item{Signed: "unregistered", KeyID: "ffffffffffffffff"}
	esc := replay.Item{Signed: "x", KeyID: "k\n1", Principal: "p\x1b", Role: "writer"}
	before := replay.Item{Signed: "before-signing"}
	unatt := replay.Item{Signed: a.Signed, KeyID: a.KeyID, Principal: a.Principal, Role: a.Role, Unattested: &replay.Unattested{Status: "unsigned"}}
	rekeyed, renamed := a, a
	rekeyed.KeyID, renamed.Role = "0000000000000001", "serve"
	var items []replay.Item
	for i, s := range []replay.Item{a, a, unatt, a, b, {}, b, raw, esc, esc, before, a, rekeyed, renamed, a, unatt, unatt, b} {
		s.Seq, s.At, s.Type = uint64(i+1), t0, "session.activity_changed"
		items = append(items, s)
	}
	var whole bytes.Buffer
	if err := replay.WriteText(&whole, items); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, it := range items {
		if err := replay.WriteText(&want, []replay.Item{it}); err != nil {
			t.Fatal(err)
		}
	}
	if whole.String() != want.String() {
		t.Fatalf("items written together say other signers than each alone:\n got: %q\nwant: %q", whole.String(), want.String())
	}
	if !strings.Contains(want.String(), "signed=serve@vm/serve (key 1a2b3c4d5e6f7081)") || strings.Count(want.String(), "signed=") != len(items)-4 {
		t.Fatalf("the items' signers are not what the test means:\n%s", want.String())
	}
}
