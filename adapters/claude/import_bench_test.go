package claude

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/natslog/natslogtest"
	"github.com/logbook-dev/logbook/events"
)

// BenchmarkImport imports a generated tree of transcripts (LOGBOOK_BENCH_TREE
// = "<transcripts>x<lines>", default 40x500; the floor is for
// 2000x500) with 16 transcripts under way, 4 parsing, and a SkipIndex, as `logbook import claude`
// does, into an embedded server with fsync always, then imports the
// unchanged tree again. The baseline in the same run, on the same server, publishes the
// same events raw: each session's events in order, in atomic batches of at
// most events.MaxBatch, from 4 publishers. It reports import-ev/s,
// raw-ev/s, import/raw (the floor is 0.50), import-s (the floor for
// 2000x500 is 180 s on 2 cores), reimport-s (5 s) and import-cpu-s, the
// CPU time the import took, importer and server together (on a loaded
// machine a steadier measure than import-s), raw-cpu-s, the CPU time the
// baseline took (publishers and server), ev/batch, the events per
// commit the import sent, and import-allocs/ev and import-B/ev, the heap
// allocations the import made per event and their bytes (importer and
// server together: counts that a loaded machine does not move). With
// LOGBOOK_BENCH_SIGN set, the import signs what it appends with a writer
// key, as `logbook import claude` does with its data dir's. Run:
//
//	go test -run '^$' -bench Import -benchtime 1x -count 5 ./adapters/claude/
//	LOGBOOK_BENCH_TREE=2000x500 go test -run '^$' -bench Import -benchtime 1x -timeout 30m ./adapters/claude/
func BenchmarkImport(b *testing.B) {
	sessions, lines := 40, 500
	if v := os.Getenv("LOGBOOK_BENCH_TREE"); v != "" {
		s, l, ok := strings.Cut(v, "x")
		var err1, err2 error
		sessions, err1 = strconv.Atoi(s)
		lines, err2 = strconv.Atoi(l)
		if !ok || err1 != nil || err2 != nil {
			b.Fatalf("LOGBOOK_BENCH_TREE=%q: want <transcripts>x<lines>", v)
		}
	}
	root := b.TempDir()
	if err := writeTree(root, sessions, lines); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var imp, re, raw, impCPU, rawCPU time.Duration
	var batches, mallocs, alloced uint64
	var evs int
	for range b.N {
		b.StopTimer()
		log, srv := natslogtest.Start(b, natslog.FsyncAlways)
		if os.Getenv("LOGBOOK_BENCH_SIGN") != "" {
			k, err := attestation.NewKey("bench", attestation.RoleWriter)
			if err != nil {
				b.Fatal(err)
			}
			log.SetSigner(k)
		}
		x, err := ingest.OpenSkipIndex(filepath.Join(b.TempDir(), "import-index.json"), "bench")
		if err != nil {
			b.Fatal(err)
		}
		in, err := NewIngester(IngestConfig{Log: log, Host: "bench", Skip: x, Parsers: 4})
		if err != nil {
			b.Fatal(err)
		}
		ts, err := Discover(root)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		stop := profileImport(b)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		start, cpu0, st0 := time.Now(), processCPU(), log.Stats()
		if n, err := importAll(ctx, in, ts); err != nil || n != sessions*lines {
			b.Fatalf("import: %d lines, %v", n, err)
		}
		imp += time.Since(start)
		impCPU += processCPU() - cpu0
		runtime.ReadMemStats(&ms1)
		mallocs += ms1.Mallocs - ms0.Mallocs
		alloced += ms1.TotalAlloc - ms0.TotalAlloc
		stop()
		batches += log.Stats().Batches - st0.Batches
		start = time.Now()
		if n, err := importAll(ctx, in, ts); err != nil || n != 0 {
			b.Fatalf("import again: %d lines, %v", n, err)
		}
		re += time.Since(start)
		b.StopTimer()
		bodies, n, err := sessionBodies(ctx, log)
		if err != nil {
			b.Fatal(err)
		}
		evs += n
		nc, err := srv.Connect()
		if err != nil {
			b.Fatal(err)
		}
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		start, cpu0 = time.Now(), processCPU()
		if err := publishRaw(ctx, js, bodies); err != nil {
			b.Fatal(err)
		}
		raw += time.Since(start)
		rawCPU += processCPU() - cpu0
		nc.Close()
		log.Close()
		b.StartTimer()
	}
	ir, rr := float64(evs)/imp.Seconds(), float64(evs)/raw.Seconds()
	b.ReportMetric(ir, "import-ev/s")
	b.ReportMetric(rr, "raw-ev/s")
	b.ReportMetric(ir/rr, "import/raw")
	b.ReportMetric(imp.Seconds()/float64(b.N), "import-s")
	b.ReportMetric(re.Seconds()/float64(b.N), "reimport-s")
	b.ReportMetric(impCPU.Seconds()/float64(b.N), "import-cpu-s")
	b.ReportMetric(rawCPU.Seconds()/float64(b.N), "raw-cpu-s")
	b.ReportMetric(float64(evs)/float64(batches), "ev/batch")
	b.ReportMetric(float64(mallocs)/float64(evs), "import-allocs/ev")
	b.ReportMetric(float64(alloced)/float64(evs), "import-B/ev")
}

// profileImport starts a CPU profile of the first import alone (the raw
// baseline and the import again left out) into the file
// LOGBOOK_BENCH_IMPORT_PROFILE names, when it is set and no other CPU
// profile runs (-cpuprofile); the function it returns stops it. The
// profile is written once, by the benchmark's first run.
func profileImport(b *testing.B) (stop func()) {
	path := os.Getenv("LOGBOOK_BENCH_IMPORT_PROFILE")
	if path == "" || profiled {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Logf("import profile: %v", err)
		return func() {}
	}
	profiled = true
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

// profiled is set once profileImport has written its profile.
var profiled bool

// processCPU returns the CPU time (user and system) this process has used
// so far: the importer's and the embedded server's together, which a
// loaded machine stretches less than it stretches wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// importAll imports ts as `logbook import claude` does with its default
// --workers 4: 16 transcripts under way, 4 of them parsing at once (the
// Ingester's Parsers), and returns the lines appended.
func importAll(ctx context.Context, in *Ingester, ts []Transcript) (int, error) {
	work := make(chan Transcript)
	var (
		mu   sync.Mutex
		n    int
		errs []error
		wg   sync.WaitGroup
	)
	for range 16 {
		wg.Go(func() {
			for t := range work {
				rs, err := in.ImportTranscript(ctx, t, nil)
				mu.Lock()
				for _, r := range rs {
					n += r.Appended
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	for _, t := range ts {
		work <- t
	}
	close(work)
	wg.Wait()
	return n, errors.Join(errs...)
}

// sessionBodies reads the whole log and returns each session's events as
// stored, in order, and how many there are.
func sessionBodies(ctx context.Context, log events.Log) ([][][]byte, int, error) {
	index := map[events.Aggregate]int{}
	var out [][][]byte
	n := 0
	for r, err := range log.Read(ctx, 1) {
		if err != nil {
			return nil, 0, err
		}
		i, ok := index[r.Agg]
		if !ok {
			i = len(out)
			index[r.Agg] = i
			out = append(out, nil)
		}
		body, err := r.Envelope.MarshalJSON()
		if err != nil {
			return nil, 0, err
		}
		out[i] = append(out[i], body)
		n++
	}
	return out, n, nil
}

// publishRaw publishes each session's bodies on a subject of its own
// outside the log's events, in order, in atomic batches of at most
// events.MaxBatch, from 4 publishers.
func publishRaw(ctx context.Context, js jetstream.JetStream, sessions [][][]byte) error {
	todo := make(chan int, len(sessions))
	for i := range sessions {
		todo <- i
	}
	close(todo)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := range todo {
				subject := fmt.Sprintf("%s.raw-s%d", events.SubjectOutput, i)
				for bs := sessions[i]; len(bs) > 0; {
					k := min(len(bs), events.MaxBatch)
					msgs := make([]*nats.Msg, k)
					for j := range msgs {
						msgs[j] = nats.NewMsg(subject)
						msgs[j].Data = bs[j]
					}
					if _, err := jetstreamext.PublishMsgBatch(ctx, js, msgs); err != nil {
						errs[w] = err
						return
					}
					bs = bs[k:]
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeTree writes sessions transcripts of lines lines each under
// root/-home-user-bench, shaped like a recorded session: a
// permission-mode line, then turns of six lines (prompt, thinking, tool
// use, tool result, reply, turn duration).
func writeTree(root string, sessions, lines int) error {
	dir := filepath.Join(root, "-home-user-bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for s := range sessions {
		sid := fmt.Sprintf("5e551011-0000-4000-8000-%012d", s+1)
		f, err := os.Create(filepath.Join(dir, sid+".jsonl"))
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		for n := 1; n <= lines; n++ {
			w.Write(benchLine(sid, n))
			w.WriteByte('\n')
		}
		if err := errors.Join(w.Flush(), f.Close()); err != nil {
			return err
		}
	}
	return nil
}

func benchLine(sid string, n int) []byte {
	uuid := func(n int) string { return fmt.Sprintf("%s-%d", sid[:8], n) }
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Second).Format("2006-01-02T15:04:05.000Z")
	if n == 1 {
		return fmt.Appendf(nil, `{"type":"permission-mode","permissionMode":"default","sessionId":%q}`, sid)
	}
	parent := "null"
	if n > 2 {
		parent = strconv.Quote(uuid(n - 1))
	}
	turn := (n-2)/6 + 1
	tool := fmt.Sprintf("toolu_%d", turn)
	head := fmt.Sprintf(`{"isSidechain":false,"userType":"external","cwd":"/home/user/project","sessionId":%q,"version":"2.1.140","gitBranch":"main","parentUuid":%s,`, sid, parent)
	usage := `"usage":{"input_tokens":3,"output_tokens":5}}}`
	switch (n - 2) % 6 {
	case 0:
		return fmt.Appendf(nil, `%s"type":"user","uuid":%q,"timestamp":%q,"message":{"role":"user","content":"Run the tests of package %d and fix what fails."},"promptId":"P%d"}`, head, uuid(n), at, turn, turn)
	case 1:
		return fmt.Appendf(nil, `%s"type":"assistant","uuid":%q,"timestamp":%q,"message":{"model":"claude-opus-4-7","role":"assistant","content":[{"type":"thinking","thinking":"Run the tests first.","signature":"c2ln"}],"stop_reason":"tool_use",%s`, head, uuid(n), at, usage)
	case 2:
		return fmt.Appendf(nil, `%s"type":"assistant","uuid":%q,"timestamp":%q,"message":{"model":"claude-opus-4-7","role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"go test ./pkg%d/..."}}],"stop_reason":"tool_use",%s`, head, uuid(n), at, tool, turn, usage)
	case 3:
		return fmt.Appendf(nil, `%s"type":"user","uuid":%q,"timestamp":%q,"message":{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":"ok   pkg%d 0.412s","is_error":false}]},"toolUseResult":{"stdout":"ok","stderr":"","interrupted":false}}`, head, uuid(n), at, tool, turn)
	case 4:
		return fmt.Appendf(nil, `%s"type":"assistant","uuid":%q,"timestamp":%q,"message":{"model":"claude-opus-4-7","role":"assistant","content":[{"type":"text","text":"The tests of package %d pass."}],"stop_reason":"end_turn",%s`, head, uuid(n), at, turn, usage)
	default:
		return fmt.Appendf(nil, `%s"type":"system","uuid":%q,"timestamp":%q,"subtype":"turn_duration","durationMs":4200}`, head, uuid(n), at)
	}
}
