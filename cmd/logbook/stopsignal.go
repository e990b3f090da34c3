package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stopGrace is how long a command has to end on its own after the first
// stop signal (SIGINT, SIGTERM, SIGHUP) cancelled its context, before
// main ends the process (stopOnSignals). serve's own orderly stop (the
// workers' SIGTERM-to-SIGKILL grace, 2 s by default, the HTTP server,
// the log) takes well under it.
const stopGrace = 30 * time.Second

// echoWindow is how soon after the first stop signal the same signal
// again is taken for the same stop, not a second one: GNU timeout(1), and
// `kill -- -PGID` after a kill of the process, send it to the process and
// then to its process group, which the process is in.
const echoWindow = 250 * time.Millisecond

// stopGraceKey, as a key of the context stopOnSignals returns, holds its
// grace in nanoseconds (*atomic.Int64), which allowStop lengthens.
type stopGraceKey struct{}

// allowStop lengthens the grace stopOnSignals gives the command of ctx
// after its first stop signal to d, when d is longer: a command whose
// orderly stop may take longer than stopGrace (serve's and a worker's
// commands, given their --grace between SIGTERM and SIGKILL) says so
// before it starts them. A context stopOnSignals did not make is left
// as it is. Safe for concurrent use.
func allowStop(ctx context.Context, d time.Duration) {
	h, ok := ctx.Value(stopGraceKey{}).(*atomic.Int64)
	if !ok {
		return
	}
	for {
		cur := h.Load()
		if int64(d) <= cur || h.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// stopOnSignals returns a context derived from parent that is cancelled,
// with the signal named in its cause, when the first signal arrives on
// sigs. A command ends on that cancel; one that does not (a wait that
// does not watch its context) is ended anyway: a second signal (other
// than the first's echo within echoWindow), or grace
// (lengthened by allowStop) passing after the first with release not yet
// called, writes to w which signal it was, how long since the first, and
// every goroutine's stack (where the command was), then calls exit with
// 128 plus the first signal's number (129 for SIGHUP, 130 for SIGINT,
// 143 for SIGTERM).
// Without it, a closed terminal's SIGHUP that did not end the command
// left it running for good, every later signal caught and ignored.
//
// release stops the watch; call it once the command has returned. It
// waits for the watching goroutine, so exit is never called after
// release returns (a process already ending hard ends). sigs is the
// caller's (signal.Notify): release does not stop it.
func stopOnSignals(parent context.Context, sigs <-chan os.Signal, grace time.Duration, w io.Writer, exit func(code int)) (ctx context.Context, release func()) {
	held := new(atomic.Int64)
	held.Store(int64(grace))
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, stopGraceKey{}, held))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var first os.Signal
		select {
		case <-done:
			return
		case first = <-sigs:
		}
		at := time.Now()
		cancel(&stopError{sig: first})
		grace := time.Duration(held.Load())
		timer := time.NewTimer(grace)
		defer timer.Stop()
		why := ""
		for why == "" {
			select {
			case <-done:
				return
			case s := <-sigs:
				if s == first && time.Since(at) < echoWindow {
					continue // the same stop, sent to the process and again to its group
				}
				why = fmt.Sprintf("a second signal (%s) came %s after the first (%s)", signalName(s), time.Since(at).Round(time.Millisecond), signalName(first))
			case <-timer.C:
				why = fmt.Sprintf("the command had not ended %s after %s", grace, signalName(first))
			}
		}
		code := 128 + signalNumber(first)
		fmt.Fprintf(w, "logbook: stopped hard (exit status %d): %s; where it was:\n%s\n", code, why, allStacks())
		exit(code)
	})
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			cancel(nil)
		})
	}
}

// stopError is the cause of the context stopOnSignals cancels: the stop
// signal that came first.
type stopError struct{ sig os.Signal }

func (e *stopError) Error() string { return "stopped by " + signalName(e.sig) }

// stoppedBy returns the stop signal that cancelled ctx (stopOnSignals),
// if one did.
func stoppedBy(ctx context.Context) (os.Signal, bool) {
	if se, ok := errors.AsType[*stopError](context.Cause(ctx)); ok {
		return se.sig, true
	}
	return nil, false
}

// stopErr is what a command that runs until it is stopped (a follow, a
// watch) returns once ctx has ended: ctx's error when a stop signal
// ended it, which main makes "interrupted by SIGINT" and exit status
// 128 plus its number (interrupted), as every command a signal stops
// exits; nil when ctx ended otherwise (its caller's cancel).
func stopErr(ctx context.Context) error {
	if _, ok := stoppedBy(ctx); ok {
		return ctx.Err()
	}
	return nil
}

// interrupted returns the error of command what (its path less
// "logbook ", say "replay") that failed with err after a stop signal
// cancelled ctx: one line naming what was interrupted and by which
// signal, with exit status 128 plus its number (130 for SIGINT), in
// place of the cancel's error as it reached the command ("context
// canceled"). An err that is not the cancel's, or already carries an
// exit status of 128 or more, is returned as it is, as is every err
// when no stop signal cancelled ctx.
func interrupted(ctx context.Context, what string, err error) error {
	sig, ok := stoppedBy(ctx)
	if err == nil || !ok {
		return err
	}
	if ee, ok := errors.AsType[*exitError](err); ok && ee.code >= 128 {
		return err
	}
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.Cause(ctx)) {
		return err
	}
	return &exitError{code: 128 + signalNumber(sig), err: fmt.Errorf("%s interrupted by %s", what, signalName(sig))}
}

// signalName returns s as its conventional name (SIGHUP), else as Go
// spells it.
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// signalNumber returns s's number, 15 (SIGTERM's) for a signal that is not
// a syscall.Signal.
func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return int(syscall.SIGTERM)
}

// allStacks returns every goroutine's stack, as a panic prints them.
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}
