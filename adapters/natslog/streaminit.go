package natslog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// RedactURL hides the password of each comma-separated NATS URL in s.
func RedactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// InitWaitError is InitStream's error when its wait ran out: before any
// node took the connection (Leader false), or before the cluster's
// JetStream answered (Leader true: no meta leader elected?). Err is the
// last attempt's error.
type InitWaitError struct {
	Leader bool
	Err    error
}

func (e *InitWaitError) Error() string {
	if e.Leader {
		return "the cluster did not answer in time: " + e.Err.Error()
	}
	return "no node answered in time: " + e.Err.Error()
}

func (e *InitWaitError) Unwrap() error { return e.Err }

// InitStream connects to url with opts (admin credentials) and creates
// the log's stream with replicas copies (Open with Config.Replicas), or
// checks the one there; it reports which. Nodes that have just started
// may not listen yet, and a cluster answers nothing, or "temporarily
// unavailable", until it has elected a JetStream meta leader: InitStream
// waits for both, up to wait, each attempt's connect and requests bounded
// by the time left (AttemptTimeout), 250 ms apart. Past wait the error is
// an *InitWaitError; a refused setting is "stream LOGBOOK on URL: …"; a
// connection refused for another reason than no server, and ctx's end,
// are returned as they are. The connection is closed on return.
func InitStream(ctx context.Context, url string, opts []nats.Option, replicas int, wait time.Duration) (info *jetstream.StreamInfo, existed bool, err error) {
	deadline := time.Now().Add(wait)
	var nc *nats.Conn
	for {
		nc, err = Connect(url, append(opts, nats.Timeout(AttemptTimeout(deadline)), nats.MaxReconnects(3))...)
		if err == nil {
			break
		}
		if !errors.Is(err, nats.ErrNoServers) && !errors.Is(err, nats.ErrTimeout) || ctx.Err() != nil {
			return nil, false, err
		}
		if time.Now().After(deadline) {
			return nil, false, &InitWaitError{Err: err}
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, false, err
	}
	for {
		actx, cancel := context.WithTimeout(ctx, AttemptTimeout(deadline))
		_, err = js.Stream(actx, StreamName)
		existed = err == nil
		if err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
			var l *Log
			if l, err = Open(actx, nc, Config{Replicas: replicas}); err == nil {
				l.Close()
				cancel()
				break
			}
		}
		cancel()
		if !Unserved(ctx, err) {
			return nil, false, fmt.Errorf("stream %s on %s: %w", StreamName, RedactURL(url), err)
		}
		if time.Now().After(deadline) {
			return nil, false, &InitWaitError{Leader: true, Err: err}
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, false, err
	}
	info, err = st.Info(ctx)
	if err != nil {
		return nil, false, err
	}
	return info, existed, nil
}

// AttemptTimeout is how long one attempt of InitStream (a connect, or a
// JetStream request) may take: the time left until deadline, at most
// 5 s (the JetStream default) and at least 1 s, so that a wait of 0
// makes one short attempt and a long wait many.
func AttemptTimeout(deadline time.Time) time.Duration {
	return min(max(time.Until(deadline), time.Second), 5*time.Second)
}
