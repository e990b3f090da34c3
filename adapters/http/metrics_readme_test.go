package httpapi

import (
	"context"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetrics_READMENames: the metrics README.md's table lists are the
// logbook_* metrics the registry serves, no more and no fewer. Every
// vector gets a child first, since an unobserved one is not gathered.
func TestMetrics_READMENames(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "### Metrics\n")
	if !ok {
		t.Fatal(`README.md has no "### Metrics" section`)
	}
	table, _, _ = strings.Cut(table, "\n```")
	name := regexp.MustCompile("`(logbook_[a-z_]+)")
	var want []string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "| `logbook_") {
			for _, m := range name.FindAllStringSubmatch(line, -1) {
				want = append(want, m[1])
			}
		}
	}

	m := NewMetrics(MetricsOptions{ConsumersPending: func(context.Context) (map[string]uint64, error) {
		return map[string]uint64{"c": 1}, nil
	}})
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem() // unexported
		switch f.Type() {
		case reflect.TypeFor[*prometheus.CounterVec](), reflect.TypeFor[*prometheus.HistogramVec]():
			// The label count is not exported: try 0..5 values.
			for n := 0; n <= 5; n++ {
				args := []reflect.Value{reflect.ValueOf(slices.Repeat([]string{"x"}, n))}
				out := f.MethodByName("GetMetricWithLabelValues").CallSlice(args)
				if out[1].IsNil() {
					break
				}
			}
		}
	}
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "logbook_") {
			got = append(got, mf.GetName())
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("README.md lists %v\n/metrics serves %v", want, got)
	}
}

// logbook_appends_paused_since_seconds is the pause's start while
// appends are paused and 0 otherwise.
func TestMetrics_AppendsPausedSince(t *testing.T) {
	var since time.Time
	m := NewMetrics(MetricsOptions{PausedSince: func() time.Time { return since }})
	value := func() float64 {
		mfs, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "logbook_appends_paused_since_seconds" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("logbook_appends_paused_since_seconds not served")
		return 0
	}
	if v := value(); v != 0 {
		t.Errorf("not paused: %v, want 0", v)
	}
	since = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	if v := value(); v != float64(since.Unix()) {
		t.Errorf("paused: %v, want %d", v, since.Unix())
	}
}
