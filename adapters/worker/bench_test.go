// Benchmarks come in pairs measured in the same run; compare the halves
// of a pair, not runs:
//
//	go test -run '^$' -bench . -count 5 ./adapters/worker/
//
// BenchmarkStart: the latency from the start of a request's append to
// its command.started being stored (p50-µs, p99-µs), and to its
// command.running (running-p50-µs: the session attached and the process
// started in its boundary), for a worker in full_access and in read_only
// (bubblewrap), against /exec, the time a plain os/exec Start of the same
// command takes. The boundary's own cost
// per command is BenchmarkStart in ./sandbox/ (/bwrap against
// /unconfined).
//
// BenchmarkOutput: MB/s of a command's output stored on lb.out, from the
// request to command.exited (so every byte is in the log), against
// reading the same bytes from a plain os/exec pipe.
package worker

import (
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// eventWaiter signals the command events of chosen types as they are
// stored.
type eventWaiter struct {
	mu      sync.Mutex
	waiting map[string]chan struct{} // "<type> <command id>" → closed when seen
	cc      jetstream.ConsumeContext
}

func newEventWaiter(b *testing.B, e *testEnv) *eventWaiter {
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		b.Fatal(err)
	}
	cons, err := js.OrderedConsumer(b.Context(), natslog.StreamName, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{CommandFilter}, DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		b.Fatal(err)
	}
	w := &eventWaiter{waiting: map[string]chan struct{}{}}
	w.cc, err = cons.Consume(func(m jetstream.Msg) {
		key := m.Headers().Get(natslog.HeaderType) + " " + m.Subject()[len(CommandFilter)-1:]
		w.mu.Lock()
		if c, ok := w.waiting[key]; ok {
			close(c)
			delete(w.waiting, key)
		}
		w.mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.cc.Stop)
	return w
}

// expect returns a channel closed when event typ of command id is stored.
func (w *eventWaiter) expect(typ, id string) chan struct{} {
	c := make(chan struct{})
	w.mu.Lock()
	w.waiting[typ+" "+id] = c
	w.mu.Unlock()
	return c
}

func wait(b *testing.B, c chan struct{}, what string) {
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		b.Fatalf("no %s after 30 s", what)
	}
}

// reportLatency reports the median and 99th percentile of ds in µs.
func reportLatency(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) }
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

func BenchmarkStart(b *testing.B) {
	for _, mode := range []string{events.ModeFullAccess, events.ModeReadOnly} {
		b.Run(mode, func(b *testing.B) {
			if mode != events.ModeFullAccess {
				needBwrap(b)
			}
			e := newEnv(b, false)
			cfg := e.workerConfig()
			cfg.Logger = nil
			e.startWorker(cfg)
			ew := newEventWaiter(b, e)
			req := e.request(mode, "true")
			var ds, rs, xs []time.Duration
			for b.Loop() {
				id := ulid.Make().String()
				started, running, exited := ew.expect("command.started", id), ew.expect("command.running", id), ew.expect("command.exited", id)
				t0 := time.Now()
				if _, err := e.client.Request(b.Context(), id, req, nil); err != nil {
					b.Fatal(err)
				}
				wait(b, started, "command.started")
				ds = append(ds, time.Since(t0))
				wait(b, running, "command.running")
				rs = append(rs, time.Since(t0))
				wait(b, exited, "command.exited")
				xs = append(xs, time.Since(t0))
			}
			reportLatency(b, ds)
			slices.Sort(rs)
			b.ReportMetric(float64(rs[len(rs)/2].Microseconds()), "running-p50-µs")
			slices.Sort(xs)
			b.ReportMetric(float64(xs[len(xs)/2].Microseconds()), "exited-p50-µs")
		})
	}
	b.Run("exec", func(b *testing.B) {
		ws := b.TempDir()
		var ds []time.Duration
		for b.Loop() {
			cmd := exec.Command("true")
			cmd.Dir, cmd.Env = ws, []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
		}
		reportLatency(b, ds)
	})
}

func BenchmarkOutput(b *testing.B) {
	const size = 32 << 20
	gen := []string{"head", "-c", fmt.Sprint(size), "/dev/zero"}
	b.Run("log", func(b *testing.B) {
		e := newEnv(b, false)
		cfg := e.workerConfig()
		cfg.Logger = nil
		e.startWorker(cfg)
		ew := newEventWaiter(b, e)
		req := e.request(events.ModeFullAccess, gen...)
		b.SetBytes(size)
		var id string
		for b.Loop() {
			id = ulid.Make().String()
			exited := ew.expect("command.exited", id)
			if _, err := e.client.Request(b.Context(), id, req, nil); err != nil {
				b.Fatal(err)
			}
			wait(b, exited, "command.exited")
		}
		// Every byte of the last run is in the log.
		if st, err := e.client.Command(b.Context(), id); err != nil || st.OutputBytes != size {
			b.Fatalf("last run: %d bytes stored, %v; want %d", st.OutputBytes, err, size)
		}
	})
	b.Run("pipe", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			cmd := exec.Command(gen[0], gen[1:]...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, out)
			if err != nil || n != size {
				b.Fatalf("read %d bytes, %v", n, err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
