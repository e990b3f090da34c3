package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
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
