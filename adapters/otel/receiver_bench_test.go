package otel_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// BenchmarkReceiver_Logs posts requests of 100 Claude Code events (25
// prompts with a call and its usage, in one session a request) to the
// receiver over HTTP and reports the records appended a second.
func BenchmarkReceiver_Logs(b *testing.B) {
	_, _, url := newReceiver(b)
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	b.ResetTimer()
	for i := range b.N {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "claude-code")
		sl := rl.ScopeLogs().AppendEmpty()
		sid := fmt.Sprintf("bench-%d", i)
		for j := range 25 {
			for _, ev := range []map[string]any{
				{"event.name": "user_prompt", "prompt.id": fmt.Sprintf("p%d", j)},
				{"event.name": "api_request", "model": "claude-opus-4-7", "input_tokens": 10, "output_tokens": 20, "request_id": fmt.Sprintf("req_%d", j)},
				{"event.name": "tool_decision", "tool_name": "Bash", "tool_use_id": fmt.Sprintf("toolu_%d", j), "decision": "accept", "source": "config"},
				{"event.name": "tool_result", "tool_name": "Bash", "tool_use_id": fmt.Sprintf("toolu_%d", j), "success": "true"},
			} {
				lr := sl.LogRecords().AppendEmpty()
				at = at.Add(time.Millisecond)
				lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
				ev["session.id"] = sid
				if err := lr.Attributes().FromRaw(ev); err != nil {
					b.Fatal(err)
				}
			}
		}
		body := mustProto(b, ld)
		resp, err := http.Post(url+"/v1/logs", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "records/s")
}
