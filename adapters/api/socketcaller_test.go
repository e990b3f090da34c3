package api

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// TestSocketCaller_NoAnswerIsTheContexts: a call to a system socket that
// never answers ends with its context's deadline, not a read error of
// the connection (whose deadline is the same instant): a hook tells "no
// answer came" (whether serve kept it is unknown) from a refusal.
func TestSocketCaller_NoAnswerIsTheContexts(t *testing.T) {
	sock := filepath.Join(t.TempDir(), SystemSocketName)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var held []net.Conn // kept open, unanswered, until the listener closes
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	defer func() { l.Close(); <-done }()
	for range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		err := SocketCaller(sock)(ctx, VerbHook, HookRequest{ID: ulid.Make().String()}, &HookReply{})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() == nil {
			t.Errorf("no answer: %v (context: %v), want the context's deadline", err, ctx.Err())
		}
	}
}
