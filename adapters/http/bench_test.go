package httpapi

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkBoardLoad is the board's load: 500 sessions and 50 SSE
// clients (50 open boards) on one server. Each op is one hook that moves
// a session (prompt, permission, tool result in turn), delivered to all
// 50 streams, plus one board refresh of that session's summary; it reports
// the process's CPU per op, the Go heap in use after a GC with everything
// open, and the time to list all 500 sessions once (the board's load).
//
//	go test ./adapters/http -run '^$' -bench BoardLoad -benchtime 2000x -count 5
func BenchmarkBoardLoad(b *testing.B) {
	const sessions, clients = 500, 50
	e := newEnv(b)
	var last uint64
	for i := range sessions {
		last = e.prompt(sid(i), "p0")
	}
	e.waitSeq(last)
	start := strconv.FormatUint(e.api.hub.Last(), 10)
	var (
		mu   sync.Mutex
		cond = sync.NewCond(&mu)
		seen = make([]uint64, clients)
	)
	for c := range clients {
		cl := dial(b, e.http.URL+"/v1/stream?after="+start, nil)
		b.Cleanup(cl.close)
		go func() {
			for ev := range cl.ch {
				if ev.event != "record" {
					continue
				}
				n, _ := strconv.ParseUint(ev.id, 10, 64)
				mu.Lock()
				seen[c] = n
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	waitAll := func(seq uint64) {
		mu.Lock()
		defer mu.Unlock()
		for {
			done := true
			for _, s := range seen {
				done = done && s >= seq
			}
			if done {
				return
			}
			cond.Wait()
		}
	}
	listStart := time.Now()
	var page sessionsPage
	e.get("/v1/sessions?limit=1000", 200, &page)
	list := time.Since(listStart)
	if len(page.Sessions) != sessions {
		b.Fatalf("listed %d sessions, want %d", len(page.Sessions), sessions)
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s := sid(i % sessions)
		var seq uint64
		switch (i / sessions) % 3 {
		case 0:
			seq = e.permission(s, "Bash")
		case 1:
			seq = e.toolDone(s, "Bash", "toolu_Bash")
		default:
			seq = e.prompt(s, fmt.Sprintf("p%d", i))
		}
		waitAll(seq)
		e.get("/v1/sessions/"+s+"?summary=true&min_seq="+strconv.FormatUint(seq, 10), 200, nil)
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(list.Milliseconds()), "list500-ms")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
