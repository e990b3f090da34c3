package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parkedCommand stands for a command that does not watch its context: it
// closes parked, then waits on release alone.
func parkedCommand(parked chan<- struct{}, release <-chan struct{}) {
	close(parked)
	<-release
}

// The first stop signal cancels the command's context; a command that
// ends on it ends as before. One that does not is ended at a second
// signal, or once the grace has passed, with 128 plus the first signal's
// number and the stacks of where it was; release ends the watch.
func TestStopOnSignals(t *testing.T) {
	type run struct {
		sigs  chan os.Signal
		ctx   context.Context
		stop  func()
		out   *bytes.Buffer
		exits chan int
	}
	start := func(grace time.Duration) run {
		r := run{sigs: make(chan os.Signal, 2), out: &bytes.Buffer{}, exits: make(chan int, 1)}
		r.ctx, r.stop = stopOnSignals(t.Context(), r.sigs, grace, r.out, func(code int) { r.exits <- code })
		return r
	}

	t.Run("ends on the first", func(t *testing.T) {
		r := start(time.Hour)
		r.sigs <- syscall.SIGHUP
		<-r.ctx.Done()
		if got := context.Cause(r.ctx); got == nil || !strings.Contains(got.Error(), "stopped by SIGHUP") {
			t.Errorf("cause %v, want stopped by SIGHUP", got)
		}
		r.stop()
		select {
		case code := <-r.exits:
			t.Errorf("exit(%d) after the command ended", code)
		default:
		}
		if r.out.Len() != 0 {
			t.Errorf("said %q for a command that ended", r.out)
		}
	})

	t.Run("a second signal ends it", func(t *testing.T) {
		r := start(time.Hour)
		hold := make(chan struct{})
		defer close(hold)
		parked := make(chan struct{})
		go parkedCommand(parked, hold)
		<-parked // in parkedCommand, where the stacks must find it
		r.sigs <- syscall.SIGHUP
		<-r.ctx.Done()
		r.sigs <- syscall.SIGINT
		if code := <-r.exits; code != 129 {
			t.Errorf("exit(%d), want 129 (128 + SIGHUP)", code)
		}
		r.stop()
		for _, want := range []string{"logbook: stopped hard (exit status 129): a second signal (SIGINT) came ", "after the first (SIGHUP); where it was:", ".parkedCommand("} {
			if !strings.Contains(r.out.String(), want) {
				t.Errorf("said\n%s\nwant %q in it", r.out, want)
			}
		}
	})

	t.Run("the first's echo is the same stop", func(t *testing.T) {
		// timeout(1) sends its signal to the command, then to the
		// command's process group: twice at once. Unbuffered, each send
		// returns once the watch has taken the signal.
		r := run{sigs: make(chan os.Signal), out: &bytes.Buffer{}, exits: make(chan int, 1)}
		r.ctx, r.stop = stopOnSignals(t.Context(), r.sigs, time.Hour, r.out, func(code int) { r.exits <- code })
		r.sigs <- syscall.SIGTERM
		r.sigs <- syscall.SIGTERM
		<-r.ctx.Done()
		r.stop()
		select {
		case code := <-r.exits:
			t.Errorf("exit(%d) on the first signal's echo; said\n%.300s", code, r.out)
		default:
		}
	})

	t.Run("the grace ends it", func(t *testing.T) {
		r := start(time.Millisecond)
		r.sigs <- syscall.SIGTERM
		if code := <-r.exits; code != 143 {
			t.Errorf("exit(%d), want 143 (128 + SIGTERM)", code)
		}
		r.stop()
		if want := "logbook: stopped hard (exit status 143): the command had not ended 1ms after SIGTERM; where it was:\ngoroutine "; !strings.HasPrefix(r.out.String(), want) {
			t.Errorf("said\n%s\nwant it to begin %q", r.out, want)
		}
	})

	t.Run("allowStop lengthens the grace", func(t *testing.T) {
		r := start(time.Millisecond)
		allowStop(r.ctx, 2*time.Millisecond)
		allowStop(r.ctx, time.Microsecond) // never shortens it
		allowStop(t.Context(), time.Hour)  // another context: no effect
		r.sigs <- syscall.SIGINT
		if code := <-r.exits; code != 130 {
			t.Errorf("exit(%d), want 130 (128 + SIGINT)", code)
		}
		r.stop()
		if want := "the command had not ended 2ms after SIGINT"; !strings.Contains(r.out.String(), want) {
			t.Errorf("said\n%.300s\nwant %q in it", r.out, want)
		}
	})

	t.Run("no signal", func(t *testing.T) {
		r := start(time.Millisecond)
		r.stop()
		r.stop() // twice is harmless
		r.sigs <- syscall.SIGHUP
		if r.ctx.Err() == nil {
			t.Error("the context is not done after release")
		}
		if context.Cause(r.ctx) != context.Canceled {
			t.Errorf("cause %v after release alone, want context.Canceled", context.Cause(r.ctx))
		}
		select {
		case code := <-r.exits:
			t.Errorf("exit(%d) with no signal", code)
		default:
		}
	})
}

// A command whose context a stop signal cancelled, and that fails on
// the cancel, fails with one line naming what was interrupted and by
// which signal, exit status 128 plus its number, not "context
// canceled"; a failure of its own, and a command that was not stopped,
// keep their errors.
func TestStopSignal_InterruptedCommand(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	fixture := "../../testdata/claude/projects/-home-user-project/5e551011-0000-4000-8000-000000000001.jsonl"
	if err := runCLI(context.Background(), []string{"--data", data, "import", "claude", fixture}, strings.NewReader(""), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	ctx, release := stopOnSignals(context.Background(), sigs, time.Hour, io.Discard, func(int) {})
	defer release()
	sigs <- syscall.SIGINT
	<-ctx.Done()
	var stderr bytes.Buffer
	err := runCLI(ctx, []string{"--data", data, "replay", "--verify"}, strings.NewReader(""), io.Discard, &stderr)
	if got := exitCode(err); got != 130 {
		t.Fatalf("replay --verify stopped by SIGINT: exit %d (%v), want 130", got, err)
	}
	if want := "replay interrupted by SIGINT"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if strings.Contains(stderr.String(), "context canceled") {
		t.Errorf("stderr says context canceled:\n%s", stderr.String())
	}
	own := errors.New("replay: bad input")
	if got := interrupted(ctx, "replay", own); got != own {
		t.Errorf("a failure of its own became %v", got)
	}
	if got := interrupted(context.Background(), "replay", context.Canceled); got != context.Canceled {
		t.Errorf("a command not stopped by a signal: %v", got)
	}
}
