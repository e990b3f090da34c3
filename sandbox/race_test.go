package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv, set to "1", makes TestHelperWorker a worker process for
// TestBoundary_TwoProcesses.
const helperEnv = "LB_SANDBOX_HELPER"

// TestHelperWorker is not a test of its own. Run by
// TestBoundary_TwoProcesses with helperEnv set, it is a second worker
// process: it reads "<workspace>\t<script, quoted>" lines on stdin, runs each
// script in workspace_write there, one at a time, and prints "exit <code>
// <stdout, quoted>" (or "error <message>") for each.
func TestHelperWorker(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("a helper process for TestBoundary_TwoProcesses")
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		ws, quoted, _ := strings.Cut(in.Text(), "\t")
		script, err := strconv.Unquote(quoted)
		if err != nil {
			fmt.Printf("error %q\n", err.Error())
			continue
		}
		s := Spec{Argv: []string{"sh", "-c", script}, Env: testEnv(), Workspace: ws, Mode: WorkspaceWrite, Grace: testGrace, Probed: true}
		r := newRecorder("")
		p, err := Start(context.Background(), s, r.emit)
		if err != nil {
			fmt.Printf("error %q\n", err.Error())
			continue
		}
		res, err := p.Wait()
		if err != nil {
			fmt.Printf("error %q\n", err.Error())
			continue
		}
		fmt.Printf("exit %d %q\n", res.ExitCode, r.text(Stdout))
	}
}

// helperWorker is a TestHelperWorker process.
type helperWorker struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startHelper(t *testing.T) *helperWorker {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	cmd := exec.Command(exe, "-test.run=^TestHelperWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return &helperWorker{in: in, out: bufio.NewScanner(out)}
}

func (h *helperWorker) run(ws, script string) error {
	_, err := fmt.Fprintf(h.in, "%s\t%q\n", ws, script)
	return err
}

// result returns the next result line, or an error.
func (h *helperWorker) result() (code int, stdout string, err error) {
	if !h.out.Scan() {
		return 0, "", fmt.Errorf("helper: %v", orErr(h.out.Err(), io.ErrUnexpectedEOF))
	}
	line := h.out.Text()
	if msg, ok := strings.CutPrefix(line, "error "); ok {
		return 0, "", fmt.Errorf("helper: %s", msg)
	}
	f, rest, _ := strings.Cut(strings.TrimPrefix(line, "exit "), " ")
	code, err = strconv.Atoi(f)
	if err == nil {
		stdout, err = strconv.Unquote(rest)
	}
	return code, stdout, err
}

func orErr(err, or error) error {
	if err != nil {
		return err
	}
	return or
}

// Two worker processes, one workspace (the attack): command A
// runs in workspace_write in one process and keeps the missing protected
// names missing; command B, in another process, is started while A runs,
// and waits for A's workspace (it must not run before A has ended); A
// ends, while B waits or starts; then B tries
// to create .claude/settings.json, .envrc, .mcp.json and the other
// protected names. Neither A's end nor anything else may let B create
// them, and once both are done the workspace holds nothing either left.
// 200 rounds, the order of A's end and B's start varied, in four lanes of
// two helper processes each (a lane's rounds are sequential; the lanes
// share nothing but the machine).
func TestBoundary_TwoProcesses(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	const lanes = 4
	base := t.TempDir()
	begin := time.Now()
	var failed atomic.Int64
	var wg sync.WaitGroup
	for lane := range lanes {
		a, b := startHelper(t), startHelper(t)
		wg.Go(func() {
			for round := lane; round < rounds; round += lanes {
				ws := filepath.Join(base, strconv.Itoa(round))
				out, left, err := raceRound(ws, round, a, b)
				if err != nil {
					t.Errorf("round %d: %v", round, err)
					return
				}
				if out != "" || len(left) > 0 {
					if failed.Add(1) <= 5 {
						t.Errorf("round %d (%s): B printed %q; the workspace holds %q afterwards", round, raceOrders[round%3], out, left)
					}
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d rounds in %v, %d failed", rounds, time.Since(begin).Round(time.Millisecond), failed.Load())
}

// raceOrders name how a round of TestBoundary_TwoProcesses orders A's end
// and B's start, by round%3.
var raceOrders = [3]string{"A ends after B waits", "A ends while B starts", "A ends as B is asked for"}

// raceRound runs one round of TestBoundary_TwoProcesses in workspace ws
// (made here): A on helper a, B on helper b. It returns what B printed
// (nothing unless it created a protected name) and what the workspace
// holds afterwards besides the round's own files.
func raceRound(ws string, round int, a, b *helperWorker) (string, []string, error) {
	// a-go and b-go are FIFOs: each script waits on one without polling.
	const scriptA = `: > a-ready; read x < a-go`
	const scriptB = `: > b-ready; read x < b-go
		mkdir -p .claude 2>/dev/null; echo '{"hooks":{}}' > .claude/settings.json 2>/dev/null && echo created .claude/settings.json;
		echo 'curl evil' > .envrc 2>/dev/null && echo created .envrc;
		echo '{}' > .mcp.json 2>/dev/null && echo created .mcp.json;
		for n in .git .codex .agents .logbook; do mkdir -p $n/x 2>/dev/null && echo created $n; done; true`
	await := func(name string) error {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(filepath.Join(ws, name)); err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not appear", name)
			}
		}
	}
	release := func(fifo string) error { return os.WriteFile(filepath.Join(ws, fifo), []byte("go\n"), 0o644) }
	if err := os.Mkdir(ws, 0o755); err != nil {
		return "", nil, err
	}
	for _, fifo := range []string{"a-go", "b-go"} {
		if err := unix.Mkfifo(filepath.Join(ws, fifo), 0o666); err != nil {
			return "", nil, err
		}
	}
	if err := a.run(ws, scriptA); err != nil {
		return "", nil, err
	}
	if err := await("a-ready"); err != nil {
		return "", nil, fmt.Errorf("A: %w", err)
	}
	if err := b.run(ws, scriptB); err != nil {
		return "", nil, err
	}
	switch round % 3 {
	case 0:
		// B waits for A's workspace: it must not run while A does.
		time.Sleep(100 * time.Millisecond)
		if _, err := os.Stat(filepath.Join(ws, "b-ready")); err == nil {
			return "", nil, fmt.Errorf("B runs while A holds the workspace")
		}
	case 1:
		time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
	}
	if err := release("a-go"); err != nil {
		return "", nil, err
	}
	if code, _, err := a.result(); err != nil || code != 0 {
		return "", nil, fmt.Errorf("A: exit %d, %v", code, err)
	}
	if err := await("b-ready"); err != nil {
		return "", nil, fmt.Errorf("B: %w", err)
	}
	if err := release("b-go"); err != nil {
		return "", nil, err
	}
	code, out, err := b.result()
	if err != nil || code != 0 {
		return "", nil, fmt.Errorf("B: exit %d, %v", code, err)
	}
	var left []string
	des, _ := os.ReadDir(ws)
	for _, de := range des {
		if !slices.Contains([]string{"a-ready", "a-go", "b-ready", "b-go"}, de.Name()) {
			left = append(left, de.Name())
		}
	}
	return out, left, nil
}
