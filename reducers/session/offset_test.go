package session_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
)

// lineRead observes transcript line n+1 whose agent timestamp is the
// string agent, taken in by the appending host at recv and dated there
// (as the import dates a line past its reading).
func (h *history) lineRead(agent string, recv time.Time, live bool, sigs ...events.Sig) []events.Envelope {
	h.t.Helper()
	h.lines++
	o := events.Observation{
		Key: fmt.Sprintf("line:%d", h.lines), Parser: "test/1", Line: h.lines, Kind: "assistant",
		Meta: events.Meta{SessionID: "s1"}, Signals: sigs,
		AgentTime: agent, Received: recv, Live: live,
	}
	return h.observeAt(events.ClaudeLineObserved{Observation: o}, recv)
}

// TestEvolve_AgentTimeBeyondDuration: an agent timestamp further from
// the server's clock than a time.Duration reaches (year 9999, year 1) is
// no clock's reading. A live line dated so teaches no offset and keeps
// the one learned before; a history line dated so is not moved centuries
// by it; the offset shown and stored never saturates.
func TestEvolve_AgentTimeBeyondDuration(t *testing.T) {
	server := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	for _, far := range []string{"9999-12-31T23:59:01Z", "0001-01-01T00:00:00Z"} {
		t.Run(far[:4], func(t *testing.T) {
			h := newHistory(t)
			at := server
			h.lineRead(far, at, true, sig(events.SigPrompt, "id", "p1"))
			if !h.s.ClockOffsetAt.IsZero() || h.s.ClockOffsetMS != 0 || h.s.ClockOffset() != "" {
				t.Errorf("offset %d ms at %s (%q); want none learned from %s", h.s.ClockOffsetMS, h.s.ClockOffsetAt, h.s.ClockOffset(), far)
			}
			b, err := json.Marshal(h.s)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "clock_offset") {
				t.Errorf("state JSON holds an offset: %s", b)
			}

			// A real offset is learned, and a far line after it keeps it.
			at = at.Add(time.Second)
			h.lineRead(at.Add(90*time.Second).Format(time.RFC3339Nano), at, true, sig(events.SigText, "text", "working"))
			if h.s.ClockOffsetMS != -90_000 || h.s.ClockOffset() != "agent clock 1m30s ahead of the server's" {
				t.Fatalf("offset %d ms (%q); want -90000, 1m30s ahead", h.s.ClockOffsetMS, h.s.ClockOffset())
			}
			learned := h.s.ClockOffsetAt
			at = at.Add(time.Second)
			h.lineRead(far, at, true, sig(events.SigText, "text", "still"))
			if h.s.ClockOffsetMS != -90_000 || !h.s.ClockOffsetAt.Equal(learned) {
				t.Errorf("after a line dated %s: offset %d ms learned at %s; want -90000 at %s", far, h.s.ClockOffsetMS, h.s.ClockOffsetAt, learned)
			}
			if !h.s.ObservedAt.Equal(at) {
				t.Errorf("observed at %s; want the live line's receipt %s", h.s.ObservedAt, at)
			}

			// History dated so, read later: dated by its event, corrected
			// by the offset, never centuries away.
			at = at.Add(time.Minute)
			h.lineRead(far, at, false, sig(events.SigText, "text", "history"))
			if d := h.s.ObservedAt.Sub(at); d < -time.Hour || d > time.Hour {
				t.Errorf("observed at %s after a history line dated %s read at %s", h.s.ObservedAt, far, at)
			}
		})
	}

	// A state folded before such offsets were refused shows none.
	for _, ms := range []int64{-9223372036854, 9223372036854} {
		s := session.State{ClockOffsetMS: ms, ClockOffsetAt: server}
		if got := s.ClockOffset(); got != "" {
			t.Errorf("ClockOffset of a saturated %d ms = %q; want \"\"", ms, got)
		}
	}
}
