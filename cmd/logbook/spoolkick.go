package main

import (
	"fmt"
	"strings"

	"github.com/fsnotify/fsnotify"
	"github.com/nats-io/nats.go"
)

// spoolKicks returns a channel that receives when serve should drain the
// spool at once rather than at its next once-a-second sweep: an entry
// appeared in dir (a hook spooled its payload behind others, or while
// the server could not answer it), or nc reconnected to its server (nil:
// no connection to watch). Kicks coalesce; stop ends the watch.
func spoolKicks(dir string, nc *nats.Conn) (<-chan struct{}, func(), error) {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
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
	return kick, func() { w.Close(); <-done }, nil
}
