package main

import (
	"strings"
	"testing"
)

// TestExportHeaders: the exporter's headers come from the traces
// variable, else the general one, percent-decoded; a bad entry is a
// usage error naming the variable and the entry, never the value.
func TestExportHeaders(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	h, err := exportHeaders(env(map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":        "x-other=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-honeycomb-team=abc%3D%3D, Authorization=Basic%20cGs6c2s=",
	}))
	if err != nil || h.Get("X-Honeycomb-Team") != "abc==" || h.Get("Authorization") != "Basic cGs6c2s=" || h.Get("X-Other") != "" {
		t.Fatalf("%v %v", h, err)
	}
	if h, err := exportHeaders(env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b"})); err != nil || h.Get("A") != "b" {
		t.Fatalf("%v %v", h, err)
	}
	if h, err := exportHeaders(env(nil)); err != nil || h != nil {
		t.Fatalf("%v %v", h, err)
	}
	_, err = exportHeaders(env(map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b,sekrit-token-without-key"}))
	if err == nil || !strings.Contains(err.Error(), "$OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value") || strings.Contains(err.Error(), "sekrit") {
		t.Fatalf("err %v", err)
	}
}
