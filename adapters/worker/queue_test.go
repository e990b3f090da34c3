package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// TestWorker_WaitingWritersStartInRequestOrder requests many
// workspace_write commands on one workspace at once, with two workers:
// each must start once the one before it has ended, in the order of
// their requests in the log, never two at a time, and none is left
// requested.
func TestWorker_WaitingWritersStartInRequestOrder(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	e.startWorker(e.workerConfig())
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		ids[i] = ulid.Make().String()
		wg.Go(func() {
			// Each writes its start and end to one file: a second writer
			// beside it would show between them.
			script := fmt.Sprintf("echo start %d >> order; sleep 0.3; echo end %d >> order", i, i)
			_, errs[i] = e.client.Request(t.Context(), ids[i], e.request(events.ModeWorkspaceWrite, "sh", "-c", script), nil)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	for i, id := range ids {
		if st, out := e.follow(id, 5*time.Minute); st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 0 {
			t.Fatalf("command %d (%s): status %s exit %v, output %q", i, id, st.Status, st.ExitCode, out.all.String())
		}
	}
	// The order of the requests is the log's.
	tag := map[string]int{}
	for i, id := range ids {
		tag[id] = i
	}
	var want []string
	for r, err := range e.log.Read(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Data.(events.CommandRequested); ok {
			if i, ok := tag[r.Agg.ID]; ok {
				want = append(want, fmt.Sprintf("start %d", i), fmt.Sprintf("end %d", i))
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(e.ws, "order"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("the writers ran as\n%s\nwant, in request order and one at a time,\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestWorker_StartedWriterHoldsItsWorkspace holds a workspace_write
// command between its command.started and its sandbox's start, and
// requests a second writer on the same workspace meanwhile, on a second
// worker: the second must wait for the first to end, though the first
// holds no lock yet.
func TestWorker_StartedWriterHoldsItsWorkspace(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	e.startWorker(e.workerConfig())
	first, second := ulid.Make().String(), ulid.Make().String()
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	SetTrace(func(id string, s Stage, _ time.Time) {
		if id == first && s == StageStarted {
			once.Do(func() { close(started) })
			<-release
		}
	})
	t.Cleanup(func() { SetTrace(nil) })
	script := func(name string) command.Request {
		return e.request(events.ModeWorkspaceWrite, "sh", "-c", "echo start "+name+" >> order; sleep 0.3; echo end "+name+" >> order")
	}
	if _, err := e.client.Request(t.Context(), first, script("first"), nil); err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := e.client.Request(t.Context(), second, script("second"), nil); err != nil {
		t.Fatal(err)
	}
	// The second is delivered, read and put back while the first is held
	// (each put-back waits waitRedelivery).
	time.Sleep(4 * waitRedelivery)
	close(release)
	for _, id := range []string{first, second} {
		if st, out := e.follow(id, 5*time.Minute); st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 0 {
			t.Fatalf("command %s: status %s exit %v, output %q", id, st.Status, st.ExitCode, out.all.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(e.ws, "order"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), "start first\nend first\nstart second\nend second"; got != want {
		t.Errorf("the writers ran as\n%s\nwant\n%s", got, want)
	}
}

// TestWorker_RequestsHeldByADeadDelivery takes two requests off the
// workers' consumer and never answers them, as a worker killed while it
// held them would (serve killed and started again): the consumer keeps
// them until its ack wait passes, far longer here than the test. A
// worker takes them as soon as they may start instead: the first once
// its control feed has read the log, the second, a writer waiting on the
// same workspace, once the first has ended.
func TestWorker_RequestsHeldByADeadDelivery(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	const ackWait = 10 * time.Minute
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateOrUpdateConsumer(t.Context(), natslog.StreamName, jetstream.ConsumerConfig{
		Durable: DurableName, FilterSubject: CommandFilter, DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: maxAckPending, MaxDeliver: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "echo start first >> order; until [ -e release ]; do sleep 0.05; done; echo end first >> order"))
	second := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "echo start second >> order; echo end second >> order"))
	holdRequests(t, cons, first, second)

	cfg := e.workerConfig()
	cfg.AckWait = ackWait
	e.startWorker(cfg)
	e.waitFor("the first to start", func() bool {
		st, err := e.client.Command(t.Context(), first)
		return err == nil && st.Status == command.StatusStarted
	})
	if err := os.WriteFile(filepath.Join(e.ws, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first, second} {
		if st, out := e.follow(id, 2*time.Minute); st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 0 {
			t.Fatalf("command %s: status %s exit %v, output %q", id, st.Status, st.ExitCode, out.all.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(e.ws, "order"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "start first\nend first\nstart second\nend second\n"; got != want {
		t.Errorf("the writers wrote %q, want %q: one after the other", got, want)
	}
}

// holdRequests takes the command.requested of each of ids off the
// workers' consumer cons and never answers them, as a worker killed
// while it held them would; the other command events it takes are
// acknowledged, as a worker acknowledges them unread.
func holdRequests(t *testing.T, cons jetstream.Consumer, ids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[events.Aggregate{Kind: events.KindCommand, ID: id}.Subject()] = true
	}
	deadline := time.Now().Add(time.Minute)
	for len(want) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("requests not delivered to the test's consumer: %v", want)
		}
		msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range msgs.Messages() {
			if want[m.Subject()] && m.Headers().Get(natslog.HeaderType) == (events.CommandRequested{}).EventType() {
				delete(want, m.Subject()) // held, never answered
				continue
			}
			_ = m.Ack()
		}
	}
}

// TestWorker_QueuedBehindAKilledWorkersCommand: a worker process runs a
// writer and is killed with SIGKILL; a second writer on the same
// workspace is requested then, its request held by a consumer that
// never answers (as a serve killed while holding it would leave it),
// with an ack wait far longer than the test. A worker started next
// finds the first command's worker gone, abandons it, and starts the
// second at once: the first's end frees the workspace, and the second,
// judged waiting by a take that began before (its offer once the feed
// caught up), is judged again.
func TestWorker_QueuedBehindAKilledWorkersCommand(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, true)
	const ackWait = 10 * time.Minute
	js, err := jetstream.New(e.srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	child := e.startHelperWorker(t, helperAckWait+"="+ackWait.String())
	victim := e.helperIdentity(child)
	first := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "echo start first >> order; exec sleep 600"))
	e.waitFor("the first to run", func() bool {
		b, _ := os.ReadFile(filepath.Join(e.ws, "order"))
		return string(b) == "start first\n"
	})
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	second := e.submit(e.request(events.ModeWorkspaceWrite, "sh", "-c", "echo start second >> order; echo end second >> order"))
	cons, err := js.Consumer(t.Context(), natslog.StreamName, DurableName)
	if err != nil {
		t.Fatal(err)
	}
	holdRequests(t, cons, second)

	cfg := e.workerConfig()
	cfg.AckWait = ackWait
	e.startWorker(cfg)
	if st, out := e.follow(second, 2*time.Minute); st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("second: status %s exit %v, output %q", st.Status, st.ExitCode, out.all.String())
	}
	if st, _ := e.client.Command(t.Context(), first); st.Status != command.StatusAbandoned || st.EndReason != ReasonGone || st.Worker != victim.ID {
		t.Errorf("first: status %s reason %q worker %s; want abandoned, %s, by %s", st.Status, st.EndReason, st.Worker, ReasonGone, victim.ID)
	}
	b, err := os.ReadFile(filepath.Join(e.ws, "order"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "start first\nstart second\nend second\n"; got != want {
		t.Errorf("the writers wrote %q, want %q", got, want)
	}
}
