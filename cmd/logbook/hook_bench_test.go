package main

// BenchmarkHook measures `logbook hook claude` end to end against a
// running server: process start, payload spooled durably, delivered,
// decided and appended under fsync always, spool entry removed. Beside it,
// BenchmarkHook/version-baseline runs `logbook version`: the cost of
// starting the binary at all. Run with
//
//	go test -run '^$' -bench Hook -benchtime 200x -count 5 ./cmd/logbook/
//
// and quote the medians of p50-ms and p99-ms.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func buildBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "logbook")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func BenchmarkHook(b *testing.B) {
	bin := buildBinary(b)
	data := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &globals{data: data, stdout: os.Stdout, stderr: bytes.NewBuffer(nil)}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, g, "127.0.0.1:0", "always") }()
	defer func() { cancel(); <-done }()
	dd := dataDir(data)
	for range 200 {
		if _, ok := dd.readServeInfo(); ok {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	run := func(b *testing.B, args []string, stdin func(i int) []byte) {
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			c := exec.Command(bin, args...)
			c.Env = append(os.Environ(), "LOGBOOK_DATA="+data)
			c.Stdin = bytes.NewReader(stdin(i))
			t := time.Now()
			if out, err := c.CombinedOutput(); err != nil {
				b.Fatalf("%v: %v\n%s", args, err, out)
			}
			lat = append(lat, time.Since(t))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.Run("hook", func(b *testing.B) {
		run(b, []string{"hook", "claude"}, func(i int) []byte {
			return fmt.Appendf(nil, `{"session_id":"bench-%d","cwd":"/home/user/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_%d"}`, i%64, i)
		})
		if es, _ := filepath.Glob(dd.path("spool", "*.json")); len(es) != 0 {
			b.Errorf("%d payloads left in the spool", len(es))
		}
	})
	b.Run("version-baseline", func(b *testing.B) {
		run(b, []string{"version"}, func(int) []byte { return nil })
	})
}
