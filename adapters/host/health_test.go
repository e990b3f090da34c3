package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// The log's availability as serve tracks it: unavailable from the first
// failure on (later ones keep the first time, and the last reason), and
// available again once it answers; the gauge follows.
func TestLogHealth(t *testing.T) {
	var h LogHealth
	reg := prometheus.NewRegistry()
	reg.MustRegister(h.Gauge())
	if since, _ := h.State(); !since.IsZero() || h.OK() {
		t.Fatalf("a new LogHealth is unavailable since %v", since)
	}
	h.Failed(errors.New("first"))
	first, _ := h.State()
	h.Failed(errors.New("the stream has no leader"))
	since, why := h.State()
	if since.IsZero() || !since.Equal(first) || why != "the stream has no leader" {
		t.Fatalf("after two failures: since %v (first %v), why %q", since, first, why)
	}
	if text := UnavailableText(since, why); !strings.HasPrefix(text, "log unavailable since ") || !strings.HasSuffix(text, ": the stream has no leader") {
		t.Errorf("UnavailableText = %q", text)
	}
	if v := gaugeValue(t, reg); v <= 0 {
		t.Errorf("gauge %v while unavailable, want above 0", v)
	}
	if !h.OK() {
		t.Error("ok after failures reported it was available")
	}
	if since, _ := h.State(); !since.IsZero() {
		t.Errorf("available again, yet unavailable since %v", since)
	}
	if v := gaugeValue(t, reg); v != 0 {
		t.Errorf("gauge %v while available, want 0", v)
	}
}

// gaugeValue returns the value of the one gauge reg holds.
func gaugeValue(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gather: %v, %d families", err, len(mfs))
	}
	return mfs[0].GetMetric()[0].GetGauge().GetValue()
}

// Probe says when the log stops answering and what serve does meanwhile:
// a writer takes hooks into the journal, a follower (Reader), which takes
// no hooks, names none.
func TestLogHealth_ProbeSaysWhatItDoes(t *testing.T) {
	t.Parallel() // it waits on Probe's rounds: beside the other tests
	for _, reader := range []bool{false, true} {
		t.Run(map[bool]string{false: "writer", true: "reader"}[reader], func(t *testing.T) {
			t.Parallel() // a server of its own
			srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: t.TempDir(),
				Listen: "127.0.0.1:0", User: "u", Password: "p"})
			if err != nil {
				t.Fatal(err)
			}
			nc, err := natslog.Connect(srv.ClientURL(), nats.UserInfo("u", "p"), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			l, err := natslog.Open(t.Context(), nc, natslog.Config{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			said := make(chan string, 10)
			ctx, cancel := context.WithCancel(t.Context())
			h := &LogHealth{Reader: reader}
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.Probe(ctx, l, func(format string, args ...any) { said <- fmt.Sprintf(format, args...) })
			}()
			srv.Shutdown()
			var line string
			select {
			case line = <-said:
			case <-time.After(time.Minute): // a hang guard
				t.Fatal("Probe said nothing of a log that stopped answering")
			}
			cancel()
			<-done
			l.Close()
			nc.Close()
			if !strings.HasPrefix(line, "log unavailable") || strings.Contains(line, "journal") != !reader {
				t.Errorf("reader %v: Probe said %q", reader, line)
			}
		})
	}
}
