package natscluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/natslog"
)

// The cluster as users run it: three nodes with sync_interval: always,
// the stream created at R3 by admin only, and a stream that breaks the
// log's rules refused by stream init and by serve.
func TestStreamInit(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newEnv(t)
	for _, nd := range e.c.Nodes {
		js, err := nd.JetStream(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !js.SyncAlways {
			t.Errorf("%s: /varz jetstream config %+v: want sync_always", nd.Name, js)
		}
	}
	if _, stderr, err := e.as("writer", "stream", "init", "--replicas", "3"); err == nil || !strings.Contains(stderr, "admin credentials") {
		t.Errorf("stream init as writer: err %v, stderr %q; want a refusal naming admin credentials", err, stderr)
	}
	out, stderr, err := e.as("admin", "stream", "init", "--replicas", "3")
	if err != nil {
		t.Fatalf("stream init: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "stream LOGBOOK: created; R3") || !strings.Contains(out, "cluster logbook: leader n") {
		t.Errorf("stream init printed %q", out)
	}
	out, _, err = e.as("admin", "stream", "init", "--replicas", "3")
	if err != nil || !strings.Contains(out, "exists, settings checked; R3") {
		t.Errorf("stream init again: %v, %q", err, out)
	}

	// A writer cannot make the stream over; admin can, and then Logbook
	// refuses it.
	admin := e.connect("admin")
	js, _ := jetstream.New(admin)
	if err := js.DeleteStream(t.Context(), natslog.StreamName); err != nil {
		t.Fatal(err)
	}
	bad := natslog.Config{Replicas: 3}.StreamConfig()
	bad.DenyDelete = false
	bad.Discard = jetstream.DiscardOld // a full log would drop history
	if _, err := js.CreateStream(t.Context(), bad); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = e.as("admin", "stream", "init", "--replicas", "3")
	if err == nil || !strings.Contains(stderr, "deny_delete is false, want true") || !strings.Contains(stderr, "discard is") {
		t.Errorf("stream init on a bad stream: err %v, stderr %q", err, stderr)
	}
	h := e.newHost("w1", "writer", "serve", "--workers", "0")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	_, stderr, err = e.logbook(ctx, "--data", h.data, "--nats-url", e.c.URL(), "--creds", e.credsFile("serve"), "serve", "--workers", "0")
	if err == nil || !strings.Contains(stderr, "deny_delete is false") {
		t.Errorf("serve on a bad stream: err %v, stderr %q", err, stderr)
	}
}

// A reader's appends and every stream API call that changes anything are
// refused by the server, whichever node it is connected to.
func TestReaderCannotWrite(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newStreamEnv(t)
	v := &violations{mu: make(chan struct{}, 1)}
	nc := e.connect("reader", nats.ErrorHandler(v.handler))
	js, _ := jetstream.New(nc, jetstream.WithDefaultTimeout(500*time.Millisecond))
	if _, err := js.Publish(t.Context(), "lb.ev.session.x", []byte("{}")); err == nil {
		t.Errorf("reader's JetStream publish to lb.ev.session.x stored")
	}
	for _, subj := range []string{"lb.ev.session.x", "lb.out.c1", "lb.anything"} {
		if err := nc.Publish(subj, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if err := v.wait(subj); err != nil {
			t.Error(err)
		}
	}
	for _, op := range []string{"STREAM.CREATE", "STREAM.UPDATE", "STREAM.DELETE", "STREAM.PURGE", "STREAM.MSG.DELETE", "STREAM.SNAPSHOT", "STREAM.RESTORE"} {
		subj := "$JS.API." + op + "." + natslog.StreamName
		if err := nc.PublishRequest(subj, nc.NewRespInbox(), []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if err := v.wait(subj); err != nil {
			t.Error(err)
		}
	}
	if err := js.DeleteStream(t.Context(), natslog.StreamName); err == nil {
		t.Error("reader deleted the stream")
	}
	// The stream is whole: nothing a reader did reached it.
	st, err := js.Stream(t.Context(), natslog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 0 {
		t.Errorf("stream holds %d messages after the reader's attempts", n)
	}
}

// violations collects the permission violations the server reports to a
// connection.
type violations struct {
	mu   chan struct{}
	errs []error
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.lock()
	defer v.unlock()
	v.errs = append(v.errs, err)
}

func (v *violations) lock() {
	if v.mu == nil {
		panic("violations: use newViolations")
	}
	v.mu <- struct{}{}
}
func (v *violations) unlock() { <-v.mu }

// wait returns nil once the server reported a permissions violation
// naming subject, or an error after 5 s.
func (v *violations) wait(subject string) error {
	for range 500 {
		v.lock()
		for _, err := range v.errs {
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject+`"`) {
				v.unlock()
				return nil
			}
		}
		v.unlock()
		time.Sleep(10 * time.Millisecond)
	}
	return errors.New("no permissions violation from the server for " + subject)
}

// stream init run while the cluster has lost its JetStream meta leader
// waits out the election (--wait) instead of failing on the first
// unanswered request; with no time to wait it names the cause.
func TestStreamInit_WaitsForMetaLeader(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newEnv(t)
	leader, err := e.c.Nodes[0].MetaLeader(t.Context())
	if err != nil || leader == "" {
		t.Fatalf("meta leader %q: %v", leader, err)
	}
	var rest []string
	for _, nd := range e.c.Nodes {
		if nd.Name == leader {
			nd.Kill()
			continue
		}
		rest = append(rest, nd.URL())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args := []string{"--nats-url", strings.Join(rest, ","), "--creds", e.credsFile("admin"), "stream", "init"}
	_, stderr, err := e.logbook(ctx, append(args, "--replicas", "1", "--wait", "0s")...)
	if err == nil {
		t.Log("the meta group re-elected before stream init --wait 0s asked; nothing to check of its error")
	} else if !strings.Contains(stderr, "did not answer within --wait 0s (no JetStream meta leader elected?)") {
		t.Errorf("stream init --wait 0s with the meta leader gone: stderr %q; want the cause named", stderr)
	}
	out, stderr, err := e.logbook(ctx, append(args, "--replicas", "1", "--wait", "60s")...)
	if err != nil || !strings.Contains(out, "stream LOGBOOK:") {
		t.Fatalf("stream init --wait 60s with the meta leader gone: %v\n%s%s", err, out, stderr)
	}
}

// stream init started before any node listens (the nodes just started)
// retries the connect within --wait, then creates the stream once the
// nodes are up and have a meta leader; without --wait time left it
// names the nodes that did not answer.
func TestStreamInit_WaitsForNodesToListen(t *testing.T) {
	t.Parallel() // a cluster, processes and ports of its own
	e := newEnv(t)
	for _, nd := range e.c.Nodes {
		nd.Kill()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args := []string{"--nats-url", e.c.URL(), "--creds", e.credsFile("admin"), "stream", "init", "--replicas", "3"}
	if _, stderr, err := e.logbook(ctx, append(args, "--wait", "0s")...); err == nil || !strings.Contains(stderr, "no node answered within --wait 0s") {
		t.Errorf("stream init --wait 0s with no node up: %v, stderr %q; want the nodes named as not answering", err, stderr)
	}
	type result struct {
		out, stderr string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		out, stderr, err := e.logbook(ctx, append(args, "--wait", "60s")...)
		done <- result{out, stderr, err}
	}()
	// Let it find no node listening at least once before they start.
	time.Sleep(time.Second)
	for _, nd := range e.c.Nodes {
		if err := nd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.err != nil || !strings.Contains(r.out, "stream LOGBOOK: created") {
		t.Fatalf("stream init --wait 60s started before the nodes: %v\n%s%s", r.err, r.out, r.stderr)
	}
}
