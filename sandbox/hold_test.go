package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStart_Hold: a held command does not run until Release; stopped or
// cancelled while held it never runs; Release then lets nothing out.
// FullAccess refuses Hold.
func TestStart_Hold(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{WorkspaceWrite, ReadOnly} {
		t.Run(string(mode)+"/release", func(t *testing.T) {
			t.Parallel()
			s := newSpec(t, mode, false, "sh", "-c", "echo ran")
			s.Hold = true
			r := newRecorder("ran")
			p := start(t, s, r)
			select {
			case <-r.seen:
				t.Fatal("a held command ran before Release")
			case <-time.After(200 * time.Millisecond):
			}
			if err := p.Release(); err != nil {
				t.Fatal(err)
			}
			if err := p.Release(); err != nil {
				t.Errorf("second Release: %v", err)
			}
			res, err := p.Wait()
			if err != nil || res.ExitCode != 0 || r.text(Stdout) != "ran\n" {
				t.Errorf("after Release: %+v, %v, output %q; want exit 0 and \"ran\"", res, err, r.text(Stdout))
			}
		})
	}
	// The limits go on a held sandbox while it waits (Release only lets
	// it go on): released, it is bounded as a command started unheld is,
	// and 100 processes run only under a limit above that.
	for _, mode := range []Mode{WorkspaceWrite, ReadOnly} {
		t.Run(string(mode)+"/limits", func(t *testing.T) {
			t.Parallel()
			for _, procs := range []int{32, 1024} {
				s := newSpec(t, mode, false, "sh", "-c", `i=0; while [ $i -lt 100 ]; do sleep 30.$$ & i=$((i+1)); done 2>/dev/null
					for t in $(seq 50); do n=$(pgrep -fc "^sleep 30.$$"); [ "$n" -ge 100 ] && break; sleep 0.1; done
					pkill -f "^sleep 30.$$"; [ "$n" -ge 100 ] && echo ESCAPED; true`)
				s.Hold, s.Limits.Procs = true, procs
				r := newRecorder("")
				p := start(t, s, r)
				if err := p.Release(); err != nil {
					t.Fatal(err)
				}
				res, err := p.Wait()
				if err != nil {
					t.Fatal(err)
				}
				if res.Limits.Procs == 0 {
					t.Skipf("no process limit here: %v", res.Limits)
				}
				if ran := strings.Contains(r.text(Stdout), "ESCAPED"); ran != (procs > 100) {
					t.Errorf("100 processes ran: %v, under a limit of %d (%v)", ran, procs, res.Limits)
				}
			}
		})
	}
	t.Run("stopped while held", func(t *testing.T) {
		t.Parallel()
		s := newSpec(t, WorkspaceWrite, false, "touch", "ran")
		s.Hold = true
		r := newRecorder("")
		p := start(t, s, r)
		time.Sleep(100 * time.Millisecond)
		p.Stop()
		res, _ := p.Wait()
		if err := p.Release(); err != nil {
			t.Errorf("Release after the exit: %v", err)
		}
		if _, err := os.Stat(filepath.Join(s.Workspace, "ran")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the command ran although stopped while held (stat: %v)", err)
		}
		if !res.Stopped {
			t.Errorf("result %+v, want Stopped", res)
		}
	})
	t.Run("cancelled while held", func(t *testing.T) {
		t.Parallel()
		s := newSpec(t, WorkspaceWrite, false, "touch", "ran")
		s.Hold = true
		ctx, cancel := context.WithCancel(t.Context())
		p, err := Start(ctx, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		p.Wait()
		if _, err := os.Stat(filepath.Join(s.Workspace, "ran")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the command ran although cancelled while held (stat: %v)", err)
		}
	})
	t.Run("full access", func(t *testing.T) {
		s := newSpec(t, FullAccess, false, "true")
		s.Hold = true
		if _, err := Start(t.Context(), s, nil); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("Hold in full_access: %v, want ErrInvalidSpec", err)
		}
	})
}
