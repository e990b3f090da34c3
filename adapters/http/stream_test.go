package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// sseEvent is one Server-Sent Event as a client parses it.
type sseEvent struct {
	id, event, data string
	comment         bool
}

// sseClient reads a stream and sends its events on ch until the body
// ends; close stops it.
type sseClient struct {
	resp   *http.Response
	ch     chan sseEvent
	cancel context.CancelFunc
}

func dial(t testing.TB, url string, hdr http.Header) *sseClient {
	return dialWith(t, http.DefaultClient, url, hdr)
}

// smallWindow is a client whose connections take at most 16 KiB into the
// kernel's receive buffer (Linux autotunes it to megabytes otherwise).
var smallWindow = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(16 << 10)
	}
	return c, err
}}}

func dialWith(t testing.TB, client *http.Client, url string, hdr http.Header) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("GET %s: %s %s", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	c := &sseClient{resp: resp, ch: make(chan sseEvent, 64), cancel: cancel}
	go func() {
		defer close(c.ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev != (sseEvent{}) {
					c.ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				c.ch <- sseEvent{comment: true, data: line}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return c
}

func (c *sseClient) close() { c.cancel(); c.resp.Body.Close() }

// burst appends n events to log, as batches of 10 on 8 aggregates at
// once, each with pad bytes of raw text, and returns every sequence
// stored. started is closed after the first fifth.
func burst(t testing.TB, e *env, n, pad int, started chan<- struct{}) []uint64 {
	var (
		mu   sync.Mutex
		seqs []uint64
		wg   sync.WaitGroup
		once sync.Once
	)
	const writers, per = 8, 10
	for w := range writers {
		wg.Go(func() {
			agg := events.Aggregate{Kind: events.KindSession, ID: fmt.Sprintf("burst-%d-%s", w, ulid.Make())}
			var expect, ver uint64
			for b := 0; b < n/writers/per; b++ {
				batch := events.Batch{Agg: agg, Expect: expect}
				for range per {
					ver++
					env := e.reg.New(events.HarnessObserved{Observation: events.Observation{Key: fmt.Sprintf("k%d", ver), Parser: ObservationSchema, Kind: "burst", Raw: strings.Repeat("x", pad)}})
					env.ID, env.Agg, env.Ver, env.At = ulid.Make(), agg, ver, time.Now().UTC().Truncate(time.Microsecond)
					batch.Events = append(batch.Events, env)
				}
				ap, err := e.log.Append(context.Background(), batch)
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				expect = ap.Last
				mu.Lock()
				for s := ap.First; s <= ap.Last; s++ {
					seqs = append(seqs, s)
				}
				if len(seqs) >= n/5 && started != nil {
					once.Do(func() { close(started) })
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(seqs)
	return seqs
}

// collect reads records from c until it has seen last, and returns their
// sequences in arrival order; a dropped event ends it early.
func collect(t testing.TB, c *sseClient, last uint64, timeout time.Duration) (got []uint64, dropped *sseEvent) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-c.ch:
			if !ok {
				return got, nil
			}
			switch {
			case ev.comment:
			case ev.event == "dropped":
				return got, &ev
			case ev.event == "record":
				seq, err := strconv.ParseUint(ev.id, 10, 64)
				if err != nil {
					t.Fatalf("record id %q", ev.id)
				}
				var r struct {
					Seq uint64 `json:"seq"`
				}
				if err := json.Unmarshal([]byte(ev.data), &r); err != nil || r.Seq != seq {
					t.Fatalf("record %s: data %.100s", ev.id, ev.data)
				}
				got = append(got, seq)
				if seq >= last {
					return got, nil
				}
			}
		case <-deadline:
			t.Fatalf("stream: %d records after %v, the last %v; want up to %d", len(got), timeout, got[max(0, len(got)-1):], last)
		}
	}
}

// exactlyOnce reports the first difference between got and want.
func exactlyOnce(got, want []uint64) error {
	if len(got) != len(want) {
		seen := map[uint64]int{}
		for _, s := range got {
			seen[s]++
		}
		for _, s := range want {
			if seen[s] != 1 {
				return fmt.Errorf("%d records, want %d: sequence %d came %d times", len(got), len(want), s, seen[s])
			}
		}
		return fmt.Errorf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("record %d is sequence %d, want %d", i, got[i], want[i])
		}
	}
	return nil
}

// TestStream_HandOverDuringBurst subscribes while 10,000 events are being
// appended: from the start of the log (catch-up, then live), from the
// stream's newest event (live at once), and again with Last-Event-ID after
// cutting a stream mid-burst. Each must see every sequence once, in order.
func TestStream_HandOverDuringBurst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := e.prompt(sid(1), "p") // something before the burst
	var before []uint64
	for r, err := range e.log.Read(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, r.Seq)
	}
	started := make(chan struct{})
	done := make(chan []uint64, 1)
	go func() { done <- burst(t, e, 10000, 0, started) }()
	<-started

	fromStart := dial(t, e.http.URL+"/v1/stream?after=0", nil)
	defer fromStart.close()
	liveAt := e.api.hub.Last()
	live := dial(t, e.http.URL+"/v1/stream?after="+strconv.FormatUint(liveAt, 10), nil)
	defer live.close()
	cut := dial(t, e.http.URL+"/v1/stream?after="+strconv.FormatUint(base, 10), nil)
	var cutGot []uint64
	for len(cutGot) < 500 {
		ev := <-cut.ch
		if ev.event == "record" {
			s, _ := strconv.ParseUint(ev.id, 10, 64)
			cutGot = append(cutGot, s)
		}
	}
	cut.close()
	resumed := dial(t, e.http.URL+"/v1/stream", http.Header{"Last-Event-ID": {strconv.FormatUint(cutGot[len(cutGot)-1], 10)}})
	defer resumed.close()

	seqs := <-done
	if len(seqs) != 10000 {
		t.Fatalf("burst stored %d events, want 10000", len(seqs))
	}
	last := seqs[len(seqs)-1]
	all := append(slices.Clone(before), seqs...)

	got, dropped := collect(t, fromStart, last, 60*time.Second)
	if dropped != nil {
		t.Fatalf("from the start: dropped %s", dropped.data)
	}
	if err := exactlyOnce(got, all); err != nil {
		t.Errorf("from the start: %v", err)
	}
	got, _ = collect(t, live, last, 60*time.Second)
	if err := exactlyOnce(got, after(all, liveAt)); err != nil {
		t.Errorf("from the live end (%d): %v", liveAt, err)
	}
	got, _ = collect(t, resumed, last, 60*time.Second)
	if err := exactlyOnce(append(cutGot, got...), after(all, base)); err != nil {
		t.Errorf("cut and resumed with Last-Event-ID: %v", err)
	}
}

func after(seqs []uint64, seq uint64) []uint64 {
	i, _ := slices.BinarySearch(seqs, seq+1)
	return seqs[i:]
}

// TestStream_SlowClientDropped: a client that stops reading while the
// log runs past the live buffer is dropped with an event naming where to
// resume, and resuming there (again, if dropped again) loses and repeats
// nothing.
func TestStream_SlowClientDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, smallSendBuffers, func(c *envSettings) {
		c.StreamBuffer = 64
		c.Stream.WriteTimeout = 5 * time.Minute // here only falling behind drops it
	})
	first := e.prompt(sid(1), "p")
	slow := dialWith(t, smallWindow, e.http.URL+"/v1/stream?after="+strconv.FormatUint(first, 10), nil)
	defer slow.close()
	// It takes nothing while 400 events of 8 KiB are appended: more than
	// its channel (64 events) and the socket buffers (16 KiB a side) hold.
	t0 := time.Now()
	seqs := burst(t, e, 400, 8<<10, nil)
	last := seqs[len(seqs)-1]
	t1 := time.Now()
	got, dropped := collect(t, slow, last, 60*time.Second)
	t.Logf("burst %v, slow read %v", t1.Sub(t0), time.Since(t1))
	if dropped == nil {
		t.Fatalf("slow client read %d records and was not dropped", len(got))
	}
	var d struct {
		ResumeAfter uint64 `json:"resume_after"`
		Reason      string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(dropped.data), &d); err != nil || d.Reason == "" {
		t.Fatalf("dropped: %q", dropped.data)
	}
	if len(got) > 0 && d.ResumeAfter != got[len(got)-1] {
		t.Errorf("dropped: resume after %d, but the last record sent was %d", d.ResumeAfter, got[len(got)-1])
	}
	// Resumed where the drop said, as a client does. A reader that the
	// machine's load holds back may be dropped again, with the same
	// event: it resumes again, and all it read, across every drop, holds
	// each record once.
	for resumes := 1; ; resumes++ {
		again := dial(t, e.http.URL+"/v1/stream?after="+strconv.FormatUint(d.ResumeAfter, 10), nil)
		rest, dropped := collect(t, again, last, 60*time.Second)
		again.close()
		got = append(got, rest...)
		if dropped == nil {
			break
		}
		if err := json.Unmarshal([]byte(dropped.data), &d); err != nil || d.Reason == "" {
			t.Fatalf("resumed stream dropped: %q", dropped.data)
		}
		if len(got) > 0 && d.ResumeAfter != got[len(got)-1] {
			t.Fatalf("resumed stream dropped: resume after %d, but the last record sent was %d", d.ResumeAfter, got[len(got)-1])
		}
		t.Logf("resumed stream %d dropped too, after %d records: %s", resumes, len(rest), dropped.data)
		if resumes == 20 {
			t.Fatalf("dropped on each of %d resumes", resumes)
		}
	}
	if err := exactlyOnce(got, seqs); err != nil {
		t.Errorf("before and after the drops: %v", err)
	}
}

func TestStream_HeartbeatAndBadStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := dial(t, e.http.URL+"/v1/stream", nil)
	defer c.close()
	timeout := time.After(10 * time.Second)
	for beat := false; !beat; {
		select {
		case ev := <-c.ch:
			beat = ev.comment && strings.Contains(ev.data, "heartbeat")
		case <-timeout:
			t.Fatal("no heartbeat on an idle stream")
		}
	}
	var ae apiError
	e.get("/v1/stream?after=-1", 400, &ae)
	e.get("/v1/stream?after=4611686018427387905", 400, &ae) // 2^62 + 1, past what /v1/events takes too
	e.do("GET", "/v1/stream", "", http.Header{"Last-Event-ID": {"x"}}, 400, &ae)
}
