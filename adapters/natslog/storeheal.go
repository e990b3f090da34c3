package natslog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// A write the store could not make (a full disk, a file system remounted
// read-only, an I/O error) is critical to JetStream: the stream records
// the error and from then on stores nothing, and answers no publish,
// until the server is restarted (nats-server 2.15, stream.go
// setWriteErrLocked; filestore.go setWriteErr). An embedded Server does
// not wait for an operator: it watches for such an error and, once its
// store directory takes a probe write again, restarts JetStream on the
// same directory. JetStream recovers each stream from its files as at a
// start (a record the failed write left torn is dropped by that
// recovery, and it was never acknowledged). Connections stay up.
// Publishes made during the restart find no responder and are retried by
// the Log (see ElectionWait). A read made during it may find no
// responder, the stream not found, or a consumer whose deliveries end
// early; a Log opened over a connection to an embedded Server of this
// process knows the Server's restarts (Server.restarts) and makes every
// read that overlapped one again (acrossHeals, resumeAcrossHeals), so a
// read never passes off what it got during a restart as the answer.

// healEvery is how often an embedded Server looks for a store write
// error.
const healEvery = time.Second

// storeWriteError returns the first stream write error the server's
// health check reports (e.g. "JetStream stream '$G > LOGBOOK' write
// error: write …: no space left on device"), or "".
func (s *Server) storeWriteError() string {
	h := s.ns.Healthz(&server.HealthzOptions{Details: true})
	if h == nil {
		return ""
	}
	for _, e := range h.Errors {
		if e.Type == server.HealthzErrorStream && strings.Contains(e.Error, "write error") {
			return e.Error
		}
	}
	if strings.Contains(h.Error, "write error") {
		return h.Error
	}
	return ""
}

// writable reports whether dir takes a 64 KiB probe write and its fsync.
func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, 64<<10))
	return errors.Join(err, f.Sync(), f.Close())
}

// HealStore restarts JetStream if a stream holds a write error and the
// store directory takes writes again. It returns the write error it
// cleared ("" if none was held, or if the directory still refuses
// writes) and an error if JetStream could not be started again; the
// Server is then unusable and should be shut down. Safe to call at any
// time; an embedded Server calls it every healEvery by itself.
func (s *Server) HealStore() (string, error) {
	s.healMu.Lock()
	defer s.healMu.Unlock()
	werr := s.storeWriteError()
	if werr == "" {
		return "", nil
	}
	if err := writable(s.storeDir); err != nil {
		return "", nil
	}
	if s.ns.JetStreamConfig() == nil {
		return "", nil
	}
	if err := s.restartJetStream(); err != nil {
		return werr, fmt.Errorf("natslog: embedded: restart JetStream after %q: %w", werr, err)
	}
	return werr, nil
}

// restartJetStream shuts JetStream down and enables it again on the
// same store, counting the restart in s.restarts (odd while it runs).
// The caller holds healMu.
func (s *Server) restartJetStream() error {
	cfg := s.ns.JetStreamConfig()
	if cfg == nil {
		return errors.New("JetStream not enabled")
	}
	// EnableJetStream places the store under <StoreDir>/jetstream, as at
	// the start; the running config names that directory already.
	js := *cfg
	js.StoreDir = s.storeDir
	s.restarts.Add(1)
	defer s.restarts.Add(1)
	s.restartMu.Lock()
	close(s.restarted)
	s.restarted = make(chan struct{})
	s.restartMu.Unlock()
	if err := s.ns.ShutdownJetStream(); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return s.ns.EnableJetStream(&js)
}

// heal calls HealStore every healEvery until the Server shuts down, and
// tells EmbeddedConfig.Healed of each restart.
func (s *Server) heal() {
	t := time.NewTicker(healEvery)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		if werr, err := s.HealStore(); werr != "" && s.cfg.Healed != nil {
			s.cfg.Healed(werr, err)
		}
	}
}

// embedded maps the server ID of each running embedded Server of this
// process to its *Server, so that Open finds the Server behind a
// connection (nats.Conn.ConnectedServerId) and its reads can wait out
// its restarts of JetStream.
var embedded sync.Map

// embeddedOf returns the running embedded Server nc is connected to, or
// nil (another process's server, a cluster).
func embeddedOf(nc interface{ ConnectedServerId() string }) *Server {
	if v, ok := embedded.Load(nc.ConnectedServerId()); ok {
		return v.(*Server)
	}
	return nil
}

// healPoll is how often a read waiting for a restart of JetStream to
// end looks again.
const healPoll = 10 * time.Millisecond

// restartsNow returns the count of the embedded Server's JetStream
// restarts begun and ended (odd while one runs); 0 without one.
func (l *Log) restartsNow() uint64 {
	if l.srv == nil {
		return 0
	}
	return l.srv.restarts.Load()
}

// restartedSince reports whether the embedded Server restarted
// JetStream, or was restarting it, since restartsNow returned gen.
func (l *Log) restartedSince(gen uint64) bool {
	return l.srv != nil && (gen%2 == 1 || l.srv.restarts.Load() != gen)
}

// awaitRestarted waits until no restart of JetStream runs, until
// deadline at most. It returns an error saying so when deadline passes
// first, ctx's when ctx ends first.
func (l *Log) awaitRestarted(ctx context.Context, deadline time.Time) error {
	for l.srv.restarts.Load()%2 == 1 {
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the embedded server was still restarting JetStream after %v", ElectionWait)
		}
		t := time.NewTimer(healPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// errRestarting wraps the last error of a read that overlapped restarts
// of JetStream until its ElectionWait was over.
var errRestarting = errors.New("the embedded server restarted JetStream during every attempt of the read")

// acrossHeals runs f, a read without side effects, and runs it again
// while the embedded Server restarted JetStream during it (after the
// restart is over), for ElectionWait at most: an answer got during a
// restart, an error or not (no responders, the stream not found, a
// stream not yet recovered), is never the read's. Without an embedded
// Server it is f(). It returns f's last error; when every attempt
// overlapped a restart until ElectionWait was over, an error wrapping
// errRestarting and f's last error; ctx's error when ctx ended while
// waiting.
func (l *Log) acrossHeals(ctx context.Context, f func() error) error {
	if l.srv == nil {
		return f()
	}
	deadline := time.Now().Add(ElectionWait)
	for {
		gen := l.restartsNow()
		err := f()
		if !l.restartedSince(gen) || ctx.Err() != nil {
			return err
		}
		if !time.Now().Before(deadline) {
			return restartingError(err)
		}
		if werr := l.awaitRestarted(ctx, deadline); werr != nil {
			return errors.Join(werr, err)
		}
	}
}

// resumeAcrossHeals runs read, a bounded read of the messages from from
// up to end that yields them in order, and, when it ended before end
// (with an error or without one) while the embedded Server restarted
// JetStream during it, runs it again from the first sequence not yet
// yielded once the restart is over, for ElectionWait at most: a restart
// ends a consumer's deliveries early, and the stream may be found empty
// or not at all while it is recovered. An error of a run that did not
// overlap a restart, or of the last, goes on to yield; without an
// embedded Server it is read(ctx, from, yield).
func (l *Log) resumeAcrossHeals(ctx context.Context, from, end uint64, yield func(Msg, error) bool,
	read func(ctx context.Context, from uint64, yield func(Msg, error) bool)) {
	if l.srv == nil {
		read(ctx, from, yield)
		return
	}
	next := max(from, 1)
	deadline := time.Now().Add(ElectionWait)
	for {
		gen := l.restartsNow()
		var rerr error
		stopped := false
		read(ctx, next, func(m Msg, err error) bool {
			if err != nil {
				rerr = err
				return false
			}
			next = m.Seq + 1
			if !yield(m, nil) {
				stopped = true
				return false
			}
			return true
		})
		if stopped {
			return
		}
		again := next <= end && ctx.Err() == nil && l.restartedSince(gen)
		if again && !time.Now().Before(deadline) {
			yield(Msg{}, fmt.Errorf("read from %d: %w", next, restartingError(rerr)))
			return
		}
		if again {
			if werr := l.awaitRestarted(ctx, deadline); werr != nil {
				yield(Msg{}, fmt.Errorf("read from %d: %w", next, errors.Join(werr, rerr)))
				return
			}
			continue
		}
		if rerr != nil {
			yield(Msg{}, rerr)
		}
		return
	}
}

// restartingError wraps errRestarting, and err, a read's last error
// (nil: it ended early without one).
func restartingError(err error) error {
	if err == nil {
		return fmt.Errorf("%w for %v", errRestarting, ElectionWait)
	}
	return fmt.Errorf("%w for %v: %w", errRestarting, ElectionWait, err)
}

// errJSRestarted is the cause of an untilRestart context ended by a
// restart of JetStream.
var errJSRestarted = errors.New("the embedded server restarted JetStream")

// untilRestart returns a context derived from ctx that ends, with cause
// errJSRestarted, when a restart of JetStream begins: a raw read's
// consumer and pulls are gone then, and waiting for its stall watch
// would only delay the read. cancel releases it.
func (s *Server) untilRestart(ctx context.Context) (context.Context, context.CancelFunc) {
	s.restartMu.Lock()
	ch := s.restarted
	s.restartMu.Unlock()
	rctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel(errJSRestarted)
		case <-stop:
		case <-rctx.Done():
		}
	}()
	return rctx, func() { close(stop); cancel(nil) }
}
