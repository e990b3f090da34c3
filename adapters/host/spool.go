package host

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/nats-io/nats.go"
)

// SpoolKicks returns a channel that receives when serve should drain the
// spool at once rather than at its next once-a-second sweep: an entry
// appeared in dir (a hook spooled its payload behind others, or while
// the server could not answer it), or nc reconnected to its server (nil:
// no connection to watch; nc's reconnect handler is replaced). Kicks
// coalesce; stop ends the watch and waits for its goroutine. An error
// ("watch spool: …") is fsnotify's.
func SpoolKicks(dir string, nc *nats.Conn) (kick <-chan struct{}, stop func(), err error) {
	ch := make(chan struct{}, 1)
	poke := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, nil, fmt.Errorf("watch spool: %w", err)
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("watch spool: %w", err)
	}
	if nc != nil {
		nc.SetReconnectHandler(func(*nats.Conn) { poke() })
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				// Entries are renamed into place as <ULID>.json; the
				// temporary files and rejected/ do not count.
				name := ev.Name[strings.LastIndexByte(ev.Name, '/')+1:]
				if ev.Has(fsnotify.Create) && strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
					poke()
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				poke() // events may be lost: look
			}
		}
	}()
	return ch, func() { w.Close(); <-done }, nil
}

// DrainSpool calls drain (api.Service.DrainSpool) once a second, and at
// once on each kick, until ctx is done, and reports each round that
// delivered something (n > 0) or failed (err, not ctx's) through report,
// on DrainSpool's goroutine. It blocks until ctx is done.
func DrainSpool(ctx context.Context, drain func(context.Context) (int, error), kick <-chan struct{}, report func(n int, err error)) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if n, err := drain(ctx); err != nil && ctx.Err() == nil {
			report(n, err)
		} else if n > 0 {
			report(n, nil)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
}
