package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// DefaultStreamBuffer is how many of the newest events the Hub keeps, by
// default, for live subscribers (about 1 KiB each).
const DefaultStreamBuffer = 8192

// item is one event as the Hub keeps it: its SSE frame, encoded once for
// every subscriber, and what the metrics read of it.
type item struct {
	seq   uint64
	at    time.Time
	frame []byte
}

// Hub follows the log and keeps its newest events in a ring of fixed size,
// from which every live subscriber of the SSE stream reads at its own
// pace. Subscribers hold no queue of their own: a subscriber is a cursor
// (the last sequence it sent), so memory does not grow with slow clients,
// and the hand-over from catch-up (read from the log) to live (read from
// the ring) can neither skip nor repeat a sequence. Safe for concurrent
// use; Run owns the following goroutine.
type Hub struct {
	log  events.Log
	size int
	tap  func(events.Record) // called for each followed record, in order; may be nil

	mu   sync.Mutex
	ring []item
	head int    // index of the oldest item
	n    int    // items held
	lo   uint64 // every event with lo < seq ≤ hi is in the ring
	hi   uint64
	wake chan struct{} // closed when hi moves
	on   bool          // Run has read the log's end
	onCh chan struct{} // closed when on becomes true
}

// NewHub returns a Hub over log keeping size events (0:
// DefaultStreamBuffer). tap, if not nil, sees every record Run follows,
// in order, on Run's goroutine (the metrics count events there).
func NewHub(log events.Log, size int, tap func(events.Record)) *Hub {
	if size <= 0 {
		size = DefaultStreamBuffer
	}
	return &Hub{log: log, size: size, tap: tap, ring: make([]item, size), wake: make(chan struct{}), onCh: make(chan struct{})}
}

// Run follows the log from its end at the time of the call until ctx is
// done, and returns nil then. A failed follow is retried from the last
// sequence seen after a second.
func (h *Hub) Run(ctx context.Context) error {
	last, err := h.log.LastSeq(ctx)
	for err != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		last, err = h.log.LastSeq(ctx)
	}
	h.mu.Lock()
	h.lo, h.hi, h.on = last, last, true
	close(h.onCh)
	h.mu.Unlock()
	for ctx.Err() == nil {
		for r, err := range h.log.Follow(ctx, h.Last()+1) {
			if err != nil {
				if _, bad := errors.AsType[*natslog.DecodeError](err); bad {
					continue // as Read does: the subscriber skips it too
				}
				break
			}
			h.push(r)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// Ready returns a channel closed once Run has read the log's end and
// live events flow.
func (h *Hub) Ready() <-chan struct{} { return h.onCh }

// Last returns the sequence of the newest event the Hub has seen.
func (h *Hub) Last() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hi
}

func (h *Hub) push(r events.Record) {
	if h.tap != nil {
		h.tap(r)
	}
	it := item{seq: r.Seq, at: r.At, frame: recordFrame(r)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Seq <= h.hi {
		return // a follow restarted over what it had sent
	}
	if h.n == h.size {
		h.lo = h.ring[h.head].seq
		h.ring[h.head] = item{}
		h.head = (h.head + 1) % h.size
		h.n--
	}
	h.ring[(h.head+h.n)%h.size] = it
	h.n++
	h.hi = r.Seq
	close(h.wake)
	h.wake = make(chan struct{})
}

// since returns up to most frames of the events after seq, the sequence
// of the last one returned, a channel closed when more arrive, and
// whether seq lies before what the ring holds (the caller must read the
// log instead).
func (h *Hub) since(seq uint64, most int, out [][]byte) ([][]byte, uint64, <-chan struct{}, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on || seq < h.lo {
		return out, seq, h.wake, true
	}
	// The ring is in sequence order: find the first item after seq.
	lo, hi := 0, h.n
	for lo < hi {
		m := (lo + hi) / 2
		if h.ring[(h.head+m)%h.size].seq <= seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo
	last := seq
	for ; i < h.n && len(out) < most; i++ {
		it := h.ring[(h.head+i)%h.size]
		out = append(out, it.frame)
		last = it.seq
	}
	return out, last, h.wake, false
}

// timeAfter returns the time of the first event after seq the ring holds.
func (h *Hub) timeAfter(seq uint64) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := 0; i < h.n; i++ {
		if it := h.ring[(h.head+i)%h.size]; it.seq > seq {
			return it.at, true
		}
	}
	return time.Time{}, false
}

// recordFrame returns r as one SSE event: id the sequence, event
// "record", data the record's JSON (events.Record.MarshalJSON).
func recordFrame(r events.Record) []byte {
	data, err := json.Marshal(r)
	if err != nil {
		data, _ = json.Marshal(map[string]any{"seq": r.Seq, "subject": r.Subject, "error": err.Error()})
	}
	b := make([]byte, 0, len(data)+48)
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, "\nevent: record\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// StreamOptions bound the SSE stream.
type StreamOptions struct {
	// Heartbeat is how often an idle stream sends a comment line, so
	// proxies and clients see it alive (0: 15 s).
	Heartbeat time.Duration
	// WriteTimeout is the longest one write to a client may block before
	// the client is dropped (0: 10 s).
	WriteTimeout time.Duration
	// MaxClients is how many streams may be open at once; one more is
	// answered 503 (0: 256).
	MaxClients int
}

func (o StreamOptions) withDefaults() StreamOptions {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.MaxClients <= 0 {
		o.MaxClients = 256
	}
	return o
}

// dropFrame is the last event a dropped subscriber gets: where to resume.
func dropFrame(after uint64, reason string) []byte {
	data, _ := json.Marshal(struct {
		ResumeAfter uint64 `json:"resume_after"`
		Reason      string `json:"reason"`
	}{after, reason})
	return fmt.Appendf(nil, "event: dropped\ndata: %s\n\n", data)
}

// streamBatch is the most frames one write of a live subscriber carries.
const streamBatch = 256

// stream serves GET /v1/stream.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	after, from, err := streamStart(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if n := s.clients.Add(1); n > int64(s.opts.MaxClients) {
		s.clients.Add(-1)
		s.fail(w, r, fmt.Errorf("%w: %d streams open (the most is %d); retry later", errBusy, n-1, s.opts.MaxClients))
		return
	}
	defer s.clients.Add(-1)
	if s.metrics != nil {
		s.metrics.streams.Inc()
		defer s.metrics.streams.Dec()
	}
	select {
	case <-s.hub.Ready():
	case <-r.Context().Done():
		return
	}
	if !from {
		after = s.hub.Last()
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	write := func(b []byte) error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		_, err := w.Write(b)
		return err
	}
	flush := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		return rc.Flush()
	}
	// The retry hint, and a first line so the client knows it is on.
	if write([]byte("retry: 2000\n: logbook stream\n\n")) != nil || flush() != nil {
		return
	}
	cursor := after
	live := false
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	var frames [][]byte
	for ctx.Err() == nil {
		var (
			wake   <-chan struct{}
			behind bool
		)
		frames, cursor2, wake, behind := s.hub.since(cursor, streamBatch, frames[:0])
		if behind {
			if live {
				// It fell more than the ring behind while live: a slow
				// client. It may resume from cursor.
				_ = write(dropFrame(cursor, "slow client: fell behind the live buffer"))
				_ = flush()
				return
			}
			// Catch-up from the log, until the ring holds what follows.
			n, err := s.catchUp(ctx, cursor, write)
			cursor = n
			if err != nil {
				if ctx.Err() == nil {
					_ = write(dropFrame(cursor, "read the log: "+err.Error()))
					_ = flush()
				}
				return
			}
			if flush() != nil {
				return
			}
			continue
		}
		if len(frames) > 0 {
			live = true
			for _, f := range frames {
				if write(f) != nil {
					return
				}
			}
			if flush() != nil {
				return
			}
			cursor = cursor2
			continue
		}
		live = true
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-beat.C:
			if write([]byte(": heartbeat\n\n")) != nil || flush() != nil {
				return
			}
		}
	}
}

// catchUp writes the events after cursor from the log until the Hub's
// ring covers what follows, and returns the last sequence written.
func (s *Server) catchUp(ctx context.Context, cursor uint64, write func([]byte) error) (uint64, error) {
	for {
		// Read goes up to the log's end at the call, which is at or past
		// the ring's low mark now: once it has run to its end, every
		// event up to that mark has been written.
		lo := s.hub.low()
		for rec, err := range s.log.Read(ctx, cursor+1) {
			if err != nil {
				if _, bad := errors.AsType[*natslog.DecodeError](err); bad {
					continue
				}
				return cursor, err
			}
			if err := write(recordFrame(rec)); err != nil {
				return cursor, err
			}
			cursor = rec.Seq
			if s.hub.covers(cursor) {
				return cursor, nil
			}
		}
		if ctx.Err() != nil {
			return cursor, ctx.Err()
		}
		cursor = max(cursor, lo)
		if s.hub.covers(cursor) {
			return cursor, nil
		}
	}
}

// low returns the ring's low mark: it holds every event after it.
func (h *Hub) low() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lo
}

// covers reports whether the ring holds every event after seq.
func (h *Hub) covers(seq uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.on && seq >= h.lo
}

// streamStart reads where a stream starts: after the Last-Event-ID the
// client's EventSource sends when it reconnects, else ?after=SEQ, else
// now (the hub's newest event).
func streamStart(r *http.Request) (uint64, bool, error) {
	v, what := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, what = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return 0, false, nil
	}
	// At most 2^62, as /v1/events takes its after: no log comes near.
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n > 1<<62 {
		return 0, false, fmt.Errorf("%w: %s %q: want a stream sequence from 0 to 2^62", errBadRequest, what, v)
	}
	return n, true, nil
}
