package main

// BenchmarkHook measures a hook end to end against a running server,
// under fsync always, until the process exits with its payload appended:
//
//	BenchmarkHook/logbook-hook      `logbook-hook claude`, the binary the
//	                                README wires (issue floor: p50 ≤ 15 ms,
//	                                p99 ≤ 40 ms)
//	BenchmarkHook/hook              `logbook hook claude`, the full binary
//	BenchmarkHook/minimal-baseline  a Go program whose main does nothing:
//	                                what starting any Go process costs here
//	BenchmarkHook/version-baseline  `logbook version`: starting the full
//	                                binary at all
//
// Run with
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
	bin, err := goBuild(".", filepath.Join(b.TempDir(), "logbook"))
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// buildHookBinaries builds logbook-hook beside a logbook binary (which it
// hands the cases it does not handle itself to) and a Go program that
// does nothing, and returns the hook's path and the do-nothing one's.
func buildHookBinaries(b *testing.B, logbook string) (hook, minimal string) {
	b.Helper()
	hook, err := goBuild("../logbook-hook", filepath.Join(filepath.Dir(logbook), "logbook-hook"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module minimal\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	minimal = filepath.Join(dir, "minimal")
	c := exec.Command("go", "build", "-o", minimal, ".")
	c.Dir = dir
	c.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("go build minimal: %v\n%s", err, out)
	}
	return hook, minimal
}

func BenchmarkHook(b *testing.B) {
	bin := buildBinary(b)
	hookBin, minimal := buildHookBinaries(b, bin)
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
	run := func(b *testing.B, exe string, args []string, stdin func(i int) []byte) {
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			c := exec.Command(exe, args...)
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
	var runs int
	hook := func(exe string, args ...string) func(b *testing.B) {
		return func(b *testing.B) {
			runs++
			run(b, exe, args, func(i int) []byte {
				return fmt.Appendf(nil, `{"session_id":"bench-%d","cwd":"/home/user/p","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./..."},"tool_use_id":"toolu_%d_%d"}`, i%64, runs, i)
			})
			if es, _ := filepath.Glob(dd.path("spool", "*.json")); len(es) != 0 {
				b.Errorf("%d payloads left in the spool: the hook did not deliver them itself", len(es))
			}
		}
	}
	b.Run("logbook-hook", hook(hookBin, "claude"))
	b.Run("hook", hook(bin, "hook", "claude"))
	b.Run("minimal-baseline", func(b *testing.B) {
		run(b, minimal, nil, func(int) []byte { return nil })
	})
	b.Run("version-baseline", func(b *testing.B) {
		run(b, bin, []string{"version"}, func(int) []byte { return nil })
	})
}
