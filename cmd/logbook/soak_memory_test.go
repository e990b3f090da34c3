package main

// TestSoakMemory is the memory soak: it runs `logbook serve --pprof` as a
// child process and drives a steady mixed load against it for a set time
// — four processes sending Claude Code hooks in a loop (UserPromptSubmit,
// PreToolUse, PostToolUse, Stop; a fresh session id every fourth turn,
// else one of a few reused ones), and one `logbook exec` every 2 s. Every
// sample interval it records the events in the log, the server's RSS
// (/proc/PID/status VmRSS), its Go heap in use after a forced GC
// (/debug/memstats?gc=1), its goroutines and its open files
// (/proc/PID/fd); it saves heap profiles (after a GC) at the start of the
// warm part, in the middle and at the end, and prints the table. It fails
// when the heap in use after GC grows, once warm (after the first third of
// the run), by more than a bound per 10k events (the least-squares slope
// of heap against events, beyond heapNoise), or when goroutines or open
// files grow by more than a few; a run of 30 minutes or more also fails
// when the heap drifts more than 10% over its last two thirds (the median
// of that part's first third of samples against its last third's).
//
// The normal suite runs a short form: 12 s, sampled every 2 s.
// Settings, from the environment:
//
//	LOGBOOK_SOAK_MEMORY          how long to drive the load (a Go duration: 60m)
//	LOGBOOK_SOAK_SAMPLE          the sample interval (default 30s, 2s for the short form)
//	LOGBOOK_SOAK_PROFILES        a directory to keep the heap profiles and the table in
//	                             (start.pb.gz, mid.pb.gz, end.pb.gz, table.txt)
//	LOGBOOK_SOAK_HEAP_PER_10K    the bound, in MiB of heap per 10k events (default 1)
//	LOGBOOK_SOAK_HOOK_RATE       hooks a second, all four processes together: a
//	                             steady load (default 0: as fast as they go)
//	LOGBOOK_SOAK_BIN             a logbook binary to run instead of the soaks' copy of this one
//
// `.ci/soak --memory 60m` runs the long form.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/profiling"
)

func TestSoakMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("the memory soak does not run with -short")
	}
	t.Parallel() // a fixed time of steady load: beside the other slow tests
	dur, every := 12*time.Second, 2*time.Second
	if v := os.Getenv("LOGBOOK_SOAK_MEMORY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 30*time.Second {
			t.Fatalf("LOGBOOK_SOAK_MEMORY=%q: want a duration of 30s or more", v)
		}
		dur, every = d, 30*time.Second
	}
	if v := os.Getenv("LOGBOOK_SOAK_SAMPLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			t.Fatalf("LOGBOOK_SOAK_SAMPLE=%q: want a duration of 1s or more", v)
		}
		every = d
	}
	bound := 1.0
	if v := os.Getenv("LOGBOOK_SOAK_HEAP_PER_10K"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			t.Fatalf("LOGBOOK_SOAK_HEAP_PER_10K=%q: want MiB > 0", v)
		}
		bound = f
	}
	var hookRate float64
	if v := os.Getenv("LOGBOOK_SOAK_HOOK_RATE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			t.Fatalf("LOGBOOK_SOAK_HOOK_RATE=%q: want hooks a second, 0 or more", v)
		}
		hookRate = f
	}
	profiles := os.Getenv("LOGBOOK_SOAK_PROFILES")
	if profiles == "" {
		profiles = t.TempDir()
	} else if err := os.MkdirAll(profiles, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("LOGBOOK_SOAK_BIN")
	if bin == "" {
		bin = soakBuild(t)
	}
	s := newSoak(t, bin, 1)
	ctx := t.Context()

	pprofAt := freeLoopbackPort(t)
	logf, err := os.Create(filepath.Join(filepath.Dir(s.data), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	c := s.command(ctx, nil, "serve", "--listen", "127.0.0.1:0", "--pprof", pprofAt)
	c.Stdout, c.Stderr = logf, logf
	srv, err := s.procs.start(c)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := s.statusOf(ctx, pid); err == nil {
			break
		}
		select {
		case <-srv.gone:
			t.Fatalf("serve ended: %v; see %s", srv.err, logf.Name())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer in a minute; see %s", logf.Name())
		}
	}
	paced := "as fast as they go"
	if hookRate > 0 {
		paced = fmt.Sprintf("paced at %g hooks/s", hookRate)
	}
	t.Logf("memory soak: %s, hooks %s, sampled every %s, bound %.2f MiB of heap per 10k events once warm; profiles and table in %s", dur, paced, every, bound, profiles)

	var hooks, hookFails, execs, execFails atomic.Int64
	load, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { memHookLoop(load, s, w, hookRate/4, &hooks, &hookFails) })
	}
	wg.Go(func() { memExecLoop(load, s, &execs, &execFails) })

	table, err := os.Create(filepath.Join(profiles, "table.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer table.Close()
	head := fmt.Sprintf("%8s %8s %8s %9s %9s %6s %4s", "time", "events", "hooks", "rss_MiB", "heap_MiB", "gorout", "fds")
	t.Log(head)
	fmt.Fprintln(table, head)
	start := time.Now()
	warmAt := dur / 3
	var samples []memSample
	profiled := map[string]bool{}
	for {
		el := time.Since(start)
		smp, err := s.memSample(ctx, pid, pprofAt)
		if err != nil {
			t.Fatalf("sample at %s: %v; see %s", el.Round(time.Second), err, logf.Name())
		}
		smp.at, smp.hooks = el, hooks.Load()
		samples = append(samples, smp)
		line := fmt.Sprintf("%8s %8d %8d %9.1f %9.1f %6d %4d", el.Round(time.Second), smp.events, smp.hooks, mib(smp.rss), mib(smp.heap), smp.goroutines, smp.fds)
		t.Log(line)
		fmt.Fprintln(table, line)
		for _, p := range []struct {
			name string
			at   time.Duration
		}{{"start", warmAt}, {"mid", warmAt + (dur-warmAt)/2}, {"end", dur}} {
			if !profiled[p.name] && el >= p.at-every/2 {
				profiled[p.name] = true
				if err := saveProfile(ctx, pprofAt, "heap?gc=1", filepath.Join(profiles, p.name+".pb.gz")); err != nil {
					t.Errorf("heap profile %s: %v", p.name, err)
				}
			}
		}
		if el >= dur {
			break
		}
		select {
		case <-srv.gone:
			t.Fatalf("serve ended under load: %v; see %s", srv.err, logf.Name())
		case <-time.After(every - time.Since(start)%every):
		}
	}
	stopLoad()
	wg.Wait()
	t.Logf("memory soak: %d hooks acknowledged (%d failed), %d execs (%d failed); profiles: go tool pprof -top -inuse_space -base %s %s",
		hooks.Load(), hookFails.Load(), execs.Load(), execFails.Load(),
		filepath.Join(profiles, "start.pb.gz"), filepath.Join(profiles, "end.pb.gz"))
	if hooks.Load() == 0 || execs.Load() == 0 {
		t.Fatalf("no load reached the server: %d hooks, %d execs", hooks.Load(), execs.Load())
	}
	if hookFails.Load()*10 > hooks.Load() {
		t.Errorf("%d of %d hooks failed", hookFails.Load(), hooks.Load())
	}

	var warm []memSample
	for _, smp := range samples {
		if smp.at >= warmAt {
			warm = append(warm, smp)
		}
	}
	if len(warm) < 3 {
		t.Fatalf("%d warm samples: run longer or sample more often", len(warm))
	}
	slope := heapSlope(warm) * 10000 / (1 << 20)
	first, last := warm[0], warm[len(warm)-1]
	span := float64(last.events-first.events) / 10000
	t.Logf("memory soak: once warm, heap after GC %.1f → %.1f MiB over %d events: %.3f MiB per 10k events (bound %.2f, beyond %.0f MiB of noise); RSS %.1f → %.1f MiB, at most %.1f; goroutines %d → %d; fds %d → %d",
		mib(first.heap), mib(last.heap), last.events-first.events, slope, bound, heapNoise,
		mib(first.rss), mib(last.rss), mib(uint64(maxOf(warm, func(m memSample) int { return int(m.rss) }))),
		first.goroutines, last.goroutines, first.fds, last.fds)
	// The fitted growth over the warm part, against the bound over as
	// many events plus what a heap of this size wobbles by between two
	// samples (pools, buffers in flight). A run shorter than ten minutes
	// is still filling the stream's first message blocks (8 MiB each) and
	// the reply window, so its slope is logged, not judged: the short
	// form catches what leaks handles (goroutines, fds), the long form
	// what leaks heap.
	if grown := slope * span; dur >= 10*time.Minute && grown > bound*span+heapNoise {
		t.Errorf("heap in use after GC grows %.3f MiB per 10k events once warm (%.1f MiB over %d events), more than %.2f plus %.0f MiB; compare the profiles in %s",
			slope, grown, last.events-first.events, bound, heapNoise, profiles)
	}
	if dur >= 30*time.Minute {
		// The long form's verdict: heap flat within 10% over the last
		// two thirds of the run (the last 40 minutes of an hour).
		var tail []memSample
		for _, smp := range samples {
			if smp.at >= dur/3 {
				tail = append(tail, smp)
			}
		}
		// The level at its start and at its end: the median of the
		// first and of the last third of its samples. A single sample
		// can catch the heap with a burst in flight (block buffers of
		// 8 MiB loaded for a read of old messages, a spool drain) at
		// twice its level; a median does not follow one such sample, a
		// least-squares fit does, so the fit is logged, not judged.
		var sum float64
		for _, smp := range tail {
			sum += float64(smp.heap)
		}
		mean := sum / float64(len(tail))
		fit := heapSlope(tail) * float64(tail[len(tail)-1].events-tail[0].events) / mean
		k := max(len(tail)/3, 1)
		from, to := medianHeap(tail[:k]), medianHeap(tail[len(tail)-k:])
		drift := (to - from) / from
		t.Logf("memory soak: over the last two thirds, heap after GC averages %.1f MiB; its median goes %.1f → %.1f MiB from the first to the last third (%+.1f%%); the least-squares fit drifts %+.1f%%",
			mean/(1<<20), from/(1<<20), to/(1<<20), drift*100, fit*100)
		if drift > 0.10 {
			t.Errorf("heap after GC drifts %+.1f%% over the last two thirds of the run (median of the first third against the last), more than 10%%", drift*100)
		}
	}
	// A handle that leaks stays once the load has stopped; one that a
	// request in flight holds (a burst of hooks under a busy machine)
	// goes with it. So goroutines are judged after the load, once they
	// settle: a leak never settles, and the wait ends at the test's
	// deadline or two minutes, whichever is first.
	peak := maxOf(warm, func(m memSample) int { return m.goroutines })
	settled, err := s.settledSample(ctx, pid, pprofAt, func(m memSample) bool {
		return m.goroutines <= first.goroutines+20 && m.fds <= first.fds+10
	})
	if err != nil {
		t.Fatalf("sample after the load: %v; see %s", err, logf.Name())
	}
	t.Logf("memory soak: goroutines %d at first once warm, up to %d under load, %d after it; fds %d, %d after it", first.goroutines, peak, settled.goroutines, first.fds, settled.fds)
	if settled.goroutines > first.goroutines+20 {
		t.Errorf("goroutines grow once warm: %d at first, %d after the load stopped (up to %d under it); see %s", first.goroutines, settled.goroutines, peak, filepath.Join(profiles, "goroutines.txt"))
	}
	last = settled
	if last.fds > first.fds+10 {
		t.Errorf("open files grow once warm: %d → %d after the load stopped", first.fds, last.fds)
	}
	if err := saveProfile(ctx, pprofAt, "goroutine?debug=1", filepath.Join(profiles, "goroutines.txt")); err != nil {
		t.Errorf("goroutine profile: %v", err)
	}
}

// settledSample samples serve every half second until ok holds of a
// sample, for at most two minutes or until ctx ends, and returns the
// last sample taken.
func (s *soak) settledSample(ctx context.Context, pid int, pprofAt string, ok func(memSample) bool) (memSample, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last memSample
	for {
		m, err := s.memSample(ctx, pid, pprofAt)
		if err != nil && ctx.Err() != nil && last.goroutines > 0 {
			return last, nil // the wait ended mid-sample
		}
		if err != nil || ok(m) {
			return m, err
		}
		last = m
		select {
		case <-ctx.Done():
			return last, nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// heapNoise is how much, in MiB, the heap after GC may differ between
// two samples of a steady server: JetStream's message-block cache filling
// up to a block (8 MiB), requests and buffers in flight.
const heapNoise = 12.0

// memSample is one row of the memory soak's table.
type memSample struct {
	at         time.Duration
	events     uint64 // the log's last sequence
	hooks      int64  // hooks acknowledged so far
	rss        uint64 // bytes, VmRSS
	heap       uint64 // bytes of heap in use after a forced GC
	goroutines int
	fds        int
}

// memSample reads the server's figures: its log's last sequence from the
// API, RSS and open files from /proc, heap and goroutines from the
// --pprof listener.
func (s *soak) memSample(ctx context.Context, pid int, pprofAt string) (memSample, error) {
	var m memSample
	st, err := s.statusOf(ctx, pid)
	if err != nil {
		return m, err
	}
	m.events = st.LastSeq
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return m, fmt.Errorf("VmRSS %q: %w", rest, err)
			}
			m.rss = kb << 10
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return m, err
	}
	m.fds = len(fds)
	resp, err := http.Get("http://" + pprofAt + "/debug/memstats?gc=1")
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	var f profiling.MemFigures
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		return m, fmt.Errorf("/debug/memstats: %w", err)
	}
	m.heap, m.goroutines = f.HeapAlloc, f.Goroutines
	return m, nil
}

// memHookLoop is one process sending hooks: turns of UserPromptSubmit,
// PreToolUse, PostToolUse and Stop, each turn in a fresh session every
// fourth time, else in one of eight reused ones.
func memHookLoop(ctx context.Context, s *soak, w int, rate float64, acked, failed *atomic.Int64) {
	// pace waits for the next hook's turn at rate hooks a second (0: none).
	began, sent := time.Now(), 0
	pace := func() {
		sent++
		if rate <= 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(began.Add(time.Duration(float64(sent) / rate * float64(time.Second))))):
		}
	}
	for turn := 0; ctx.Err() == nil; turn++ {
		sess := fmt.Sprintf("mem-%d-reused-%d", w, turn%8)
		if turn%4 == 3 {
			sess = fmt.Sprintf("mem-%d-fresh-%d", w, turn)
		}
		tool := fmt.Sprintf("toolu_mem_%d_%d", w, turn)
		common := fmt.Sprintf(`"session_id":%q,"transcript_path":"/home/user/.claude/projects/p/%s.jsonl","cwd":"/home/user/project","permission_mode":"bypassPermissions"`, sess, sess)
		for _, p := range []string{
			fmt.Sprintf(`{%s,"hook_event_name":"UserPromptSubmit","prompt":"run the tests, turn %d"}`, common, turn),
			fmt.Sprintf(`{%s,"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go vet ./..."},"tool_use_id":%q}`, common, tool),
			fmt.Sprintf(`{%s,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"go vet ./..."},"tool_response":{"stdout":"ok","stderr":""},"tool_use_id":%q}`, common, tool),
			fmt.Sprintf(`{%s,"hook_event_name":"Stop","stop_hook_active":false}`, common),
		} {
			pace()
			out, err := s.run(ctx, []byte(p), "hook", "claude")
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				if failed.Add(1) <= 5 {
					s.t.Logf("hook not acknowledged: %v\n%s", err, out)
				}
				continue
			}
			acked.Add(1)
		}
	}
}

// memExecLoop runs one `logbook exec` every 2 s in one of the first
// reused sessions (the ones the hooks have made known by then).
func memExecLoop(ctx context.Context, s *soak, done, failed *atomic.Int64) {
	ws := s.t.TempDir()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id := fmt.Sprintf("memcmd-%d", n)
		out, err := s.run(ctx, nil, "exec", "--session", fmt.Sprintf("mem-%d-reused-%d", n%4, n%3), "--mode", "full_access",
			"--workspace", ws, "--id", id, "--wait", "20s", "--", "echo", "out-"+id)
		if ctx.Err() != nil {
			return
		}
		if err != nil || !bytes.Contains(out, []byte("out-"+id)) {
			if failed.Add(1) <= 5 {
				s.t.Logf("exec %s: %v\n%s", id, err, out)
			}
			continue
		}
		done.Add(1)
	}
}

// saveProfile saves the server's profile /debug/pprof/<name> to path.
func saveProfile(ctx context.Context, pprofAt, name, path string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+pprofAt+"/debug/pprof/"+name, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// medianHeap is the median heap in use after GC of ms, in bytes.
func medianHeap(ms []memSample) float64 {
	h := make([]float64, len(ms))
	for i, m := range ms {
		h[i] = float64(m.heap)
	}
	slices.Sort(h)
	if n := len(h); n%2 == 0 {
		return (h[n/2-1] + h[n/2]) / 2
	}
	return h[len(h)/2]
}

// heapSlope is the least-squares slope of heap bytes against events.
func heapSlope(ms []memSample) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, m := range ms {
		x, y := float64(m.events), float64(m.heap)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	d := n*sxx - sx*sx
	if d == 0 || math.IsNaN(d) {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func maxOf(ms []memSample, f func(memSample) int) int {
	m := 0
	for _, x := range ms {
		m = max(m, f(x))
	}
	return m
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// freeLoopbackPort returns a 127.0.0.1 address with a port free just now.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
