package api

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// newHeldEnv is newIntakeEnv on a log whose Room refuses every commit
// while held is set, as the log's reserve of free space does.
func newHeldEnv(t *testing.T, held *atomic.Bool) *intakeEnv {
	t.Helper()
	dir := t.TempDir()
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: filepath.Join(dir, "jetstream"), Fsync: natslog.FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	l, err := natslog.Open(t.Context(), srv.Conn(), natslog.Config{Registry: reg, Room: func() error {
		if held.Load() {
			return errors.New("3 bytes free under /d/jetstream, under the log's reserve of 16 MiB")
		}
		return nil
	}})
	if err != nil {
		srv.Shutdown()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		srv.Shutdown()
	})
	return &intakeEnv{t: t, dir: dir, reg: reg, log: l, journal: filepath.Join(dir, "hooks.journal")}
}

// TestService_HookHeld: while serve holds its appends for want of disk
// space, the hook verb answers at once, with code appends_held and an
// error that says why, whether its own append is refused or the hooks
// the intake took before it wait for the disk: not after the hook's
// own wait (2 s) ran out, with a timeout that says nothing of the disk.
// Once space is freed the same hook goes in.
func TestService_HookHeld(t *testing.T) {
	var held atomic.Bool
	e := newHeldEnv(t, &held)
	svc := e.service()
	svc.Paused = func() string {
		if held.Load() {
			return "appends paused: disk full since 2026-12-05T07:00:00Z (/d/jetstream: 3 bytes free, under the log's reserve of 16 MiB: appends are held so that no atomic batch is cut by a full disk)"
		}
		return ""
	}
	call := InProcess(map[string]func(context.Context, []byte) (any, error){VerbHook: svc.Hook}, t.Logf)
	const why = "serve holds appends: the disk under the log's store is short of its reserve of free space (3 bytes free under /d/jetstream, under the log's reserve of 16 MiB)"
	ask := func(t *testing.T, req []byte) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second) // under a hook's 2 s
		defer cancel()
		return call(ctx, VerbHook, json.RawMessage(req), &HookReply{})
	}
	check := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, ErrHeld) || IsInputError(err) || err.Error() != why {
			t.Fatalf("hook while appends are held: %v, want ErrHeld saying %q", err, why)
		}
		if got := errCode(svc.held(err)); got != hooksock.CodeHeld {
			t.Errorf("code %q, want %q", got, hooksock.CodeHeld)
		}
	}

	held.Store(true)
	t.Run("its own append", func(t *testing.T) {
		check(t, ask(t, hookReq(t, "s", "pre", "toolu_1")))
	})
	t.Run("behind the intake", func(t *testing.T) {
		in := e.open(svc)
		if _, err := in.Accept(t.Context(), hookReq(t, "s", "pre", "toolu_2")); err != nil {
			t.Fatal(err)
		}
		run(t, in)
		start := time.Now()
		check(t, ask(t, hookReq(t, "s", "post", "toolu_2")))
		if took := time.Since(start); took > 900*time.Millisecond {
			t.Errorf("the answer took %s", took)
		}
		held.Store(false)
		if err := ask(t, hookReq(t, "s", "post", "toolu_2")); err != nil {
			t.Fatalf("hook once space is freed: %v", err)
		}
		if obs, _ := e.observed(); strings.Join(obs["s"], ",") != "PreToolUse toolu_2,PostToolUse toolu_2" {
			t.Errorf("observed %v", obs["s"])
		}
	})
}
