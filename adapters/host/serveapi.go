package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
)

// ServeVerbs subscribes each handler of verbs on nc under prefix+verb
// and, unless ownOnly (a follower, whose credentials may not answer the
// shared prefix), under api.AnyPrefix+verb too (api.Serve, which logs
// through logf). It returns a function that unsubscribes them all; on an
// error ("serve SUBJECT: …") the ones made are unsubscribed already.
func ServeVerbs(nc *nats.Conn, verbs map[string]Handler, prefix string, ownOnly bool, logf func(format string, args ...any)) (unsubscribe func(), err error) {
	var subs []*nats.Subscription
	unsubscribe = func() {
		for i := len(subs) - 1; i >= 0; i-- {
			subs[i].Unsubscribe()
		}
	}
	for verb, h := range verbs {
		subjects := []string{prefix + verb, api.AnyPrefix + verb}
		if ownOnly {
			subjects = subjects[:1]
		}
		for _, subject := range subjects {
			sub, err := api.Serve(nc, subject, h, logf)
			if err != nil {
				unsubscribe()
				return nil, fmt.Errorf("serve %s: %w", subject, err)
			}
			subs = append(subs, sub)
		}
	}
	return unsubscribe, nil
}

// ServeIntake is logbook-hook's way in: it listens on the Unix socket at
// path (api.ListenSocket) and answers api.VerbHook there with handle (in
// serve, in.Accept: the intake journal answers once the payload is on
// disk, before the log's batch), and runs in (in.Run), each on a
// goroutine of its own. A socket costs the hook neither NATS nor the
// network stack at start-up. stop closes the socket first, so that
// nothing is taken after the last round, stops in's run, then appends
// what it took while the log is still open, waiting at most flushWait:
// it returns how many payloads are left in the journal for the next
// start, and why. Call stop once.
func ServeIntake(ctx context.Context, in *api.Intake, path string, handle Handler, logf func(format string, args ...any)) (stop func(flushWait time.Duration) (left int, err error), err error) {
	sock, err := api.ListenSocket(path)
	if err != nil {
		return nil, err
	}
	sockCtx, stopSock := context.WithCancel(ctx)
	sockDone := make(chan struct{})
	go func() {
		defer close(sockDone)
		api.ServeSocket(sockCtx, sock.UnixListener, api.VerbHook, handle, logf)
	}()
	runCtx, stopRun := context.WithCancel(context.Background())
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		in.Run(runCtx)
	}()
	return func(flushWait time.Duration) (int, error) {
		defer sock.Close()
		stopSock()
		<-sockDone
		stopRun()
		<-runDone
		fctx, cancel := context.WithTimeout(context.Background(), flushWait)
		defer cancel()
		return in.Flush(fctx)
	}, nil
}

// prefixProbeWait is how long prefixFree waits for an answer on a
// prefix that has a subscriber: a guard against a subscriber that never
// answers (a killed process the server has not yet dropped), not a
// time the check needs.
const prefixProbeWait = 2 * time.Second

// prefixFree refuses a follower's prefix that another process answers
// on already: a status request there that is answered. Two followers
// on one prefix would each take a share of the requests made to one of
// them; each follower needs credentials of its own (the server lets a
// follower's credentials answer on their own follower id only). No
// responder, or none answering within prefixProbeWait, passes.
func prefixFree(nc *nats.Conn, prefix string) error {
	if _, err := nc.Request(prefix+api.VerbStatus, []byte("{}"), prefixProbeWait); err != nil {
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) {
			return nil
		}
		return fmt.Errorf("serve %s: ask whether another follower answers there: %w", prefix, err)
	}
	return fmt.Errorf("serve %s: another follower answers there already, with the same credentials; each follower needs credentials of its own (`logbook creds cluster --followers N` writes N; on a data dir's own server, one follower follows with creds-follower.json)", prefix)
}
