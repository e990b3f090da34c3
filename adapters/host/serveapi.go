package host

import (
	"context"
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
