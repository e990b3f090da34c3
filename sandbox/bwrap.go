package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Available reports whether restricted commands can run with the bubblewrap
// at bwrapPath ("" means "bwrap" in the worker's PATH): it resolves the path
// and runs bubblewrap once with the namespaces and mounts every restricted
// command uses. It returns nil, or an error wrapping ErrRefused whose message
// says what to do. It blocks for one bubblewrap start (a few ms) and stops
// early when ctx is done. Safe for concurrent use.
func Available(ctx context.Context, bwrapPath string) error {
	bw, err := findBwrap(bwrapPath)
	if err != nil {
		return err
	}
	return probe(ctx, bw)
}

// findBwrap returns the absolute path of the bubblewrap executable named by
// p ("" means "bwrap" in PATH). Errors wrap ErrRefused.
func findBwrap(p string) (string, error) {
	const advice = "install the bubblewrap package, or run with mode full_access"
	if p == "" {
		found, err := exec.LookPath("bwrap")
		if err != nil {
			return "", fmt.Errorf("%w: bubblewrap not found in PATH: %s", ErrRefused, advice)
		}
		p = found
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%w: bubblewrap %s: %v: %s", ErrRefused, p, err, advice)
	}
	if err := executable(abs); err != nil {
		return "", fmt.Errorf("%w: bubblewrap %s: %v: %s", ErrRefused, p, err, advice)
	}
	return abs, nil
}

// probeWaitDelay is how long probe awaits bubblewrap's output once the
// process has ended or its context is done.
const probeWaitDelay = 2 * time.Second

// probe runs bubblewrap bw with the boundary options of every restricted
// command around "bw --version", bw bound onto itself read-only. Errors
// wrap ErrRefused and carry bwrap's own message.
func probe(ctx context.Context, bw string) error {
	system, links := systemMounts()
	args := append(boundaryBase(system, links, DefaultTmpBytes), "--ro-bind", bw, bw, "--", bw, "--version")
	cmd := exec.CommandContext(ctx, bw, args...)
	cmd.Args[0] = boundaryArgv0() // see SweepBoundaries
	cmd.Env = []string{}          // not the worker's
	cmd.Dir = "/"
	// Once bwrap has ended, or ctx has, its output is awaited only
	// probeWaitDelay: a process of its namespace still holding the pipe
	// (being torn down on a loaded machine) would otherwise hold the
	// probe, and a cancelled command with it, until it lets go.
	cmd.WaitDelay = probeWaitDelay
	// bubblewrap's child (pid 1 of the boundary's pid namespace) waits
	// for its parent to write its uid map before it sets its own
	// parent-death signal: a parent killed or failed in between leaves
	// it waiting for good (bubblewrap 0.8.0). It stays in bubblewrap's
	// session, which is the probe's own: a cancel kills the session, and
	// so does a probe that did not succeed, once bubblewrap is reaped
	// (what is left of the session keeps its id from being reused). A
	// probe whose own process dies in that window leaves the child to
	// SweepBoundaries, which knows it by its argv[0] (BoundaryMarker).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.Process != nil {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	}
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		err = nil // bwrap built the boundary and ran --version in it
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("probe bubblewrap %s: %w", bw, ctx.Err())
		}
		msg := string(bytes.TrimSpace(out))
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
		return fmt.Errorf("%w: bubblewrap %s cannot build the boundary (%v: %s): allow it to create namespaces (user namespaces, or root), or run with mode full_access",
			ErrRefused, bw, err, msg)
	}
	return nil
}
