package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/gate/hookgate"
	"github.com/logbook-dev/logbook/adapters/hookrecord"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/cmd/internal/hookfast"
)

// maxHookPayload caps what `logbook hook claude` reads from stdin, in
// bytes. Larger payloads are refused (the observation's own cap keeps
// far less of it anyway).
const maxHookPayload = 32 << 20

// hookTimeout bounds how long a hook waits for the server before it
// leaves the payload in the spool.
const hookTimeout = 2 * time.Second

// maxGateBudget is the longest --budget `hook claude --gate` takes: a
// day, far past any hook timeout Claude Code is set to wait.
const maxGateBudget = 24 * time.Hour

func hookCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Receive agent hooks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !hookfast.StdinIsTerminal(g.stdin) {
				// A payload piped in would be dropped: a usage mistake,
				// exit 1 as logbook-hook's (never 2, which Claude Code
				// reads as "block").
				return &exitError{code: codeError, err: errors.New(hookfast.NoSubcommandMessage)}
			}
			return cmd.Help()
		},
	}
	var (
		gated      bool
		gateBudget time.Duration
	)
	claudeHook := &cobra.Command{
		Use:   "claude",
		Short: "Record one Claude Code hook payload read from stdin",
		Long: `hook claude reads one Claude Code hook payload on stdin and delivers it to
the running server, which appends it to the log before the hook exits.
When the server is not running or does not answer, or when earlier
payloads still wait in the data dir's spool (it never overtakes them, nor
delivers them itself), it keeps the payload in the spool, durably, and the
server delivers the spool, in order, as soon as it (re)starts or sees the
new entry. It never blocks the agent:
it exits 0 whether or not the server took the payload, and 1 (a
non-blocking error for Claude Code) only for a payload it cannot use,
which it keeps aside, redacted, in the spool's rejected/ folder with the
reason, and for one it can neither deliver nor keep (a full disk, or the
data dir of a serve --role reader, which takes no hooks). A payload over 256 KiB has each of its strings cut to 4 KiB
(its original size and SHA-256 are recorded); an id or name over 256
bytes, a path over 4096, or a session_id or agent_id with a byte outside
[A-Za-z0-9_-] (it names the log's session aggregate), is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if gateBudget < 0 || gateBudget > maxGateBudget || (gateBudget > 0 && gateBudget < time.Millisecond) {
				// A usage error: with --gate it is answered as a deny.
				return usageErrorf("--budget %v: want 0 (the server's --review-budget) or from 1ms to %v", gateBudget, maxGateBudget)
			}
			if !gated && cmd.Flags().Changed("budget") {
				return usageErrorf("--budget goes with --gate: an ungated hook waits for no verdict")
			}
			if gated {
				return hookClaudeGate(cmd.Context(), g, gateBudget)
			}
			return hookClaude(cmd.Context(), g)
		},
	}
	claudeHook.Flags().BoolVar(&gated, "gate", false, "gate the call: for PreToolUse and PermissionRequest, wait for the gate's verdict and answer Claude Code with it; deny when no verdict comes (see README, The gate)")
	claudeHook.Flags().DurationVar(&gateBudget, "budget", 0, "with --gate: the most to wait for a verdict (default: the server's --review-budget, 90s); Claude Code's hook timeout must be longer")
	cmd.AddCommand(claudeHook)
	cmd.AddCommand(hookCodexCmd(g))
	return cmd
}

func hookClaude(ctx context.Context, g *globals) error {
	payload, err := io.ReadAll(io.LimitReader(g.stdin, maxHookPayload+1))
	if err != nil {
		return fmt.Errorf("hook claude: read stdin: %w", err)
	}
	if sock := g.socketPath(); sock != "" {
		return hookViaSocket(ctx, g, sock, payload)
	}
	return recordHook(ctx, g, "hook claude", payload, claude.PrepareHook)
}

// recordHook records payload, one hook payload of an agent's, into g's
// data dir (hookrecord.Recorder.Record; name leads its errors).
func recordHook(ctx context.Context, g *globals, name string, payload []byte, prepare func([]byte) ([]byte, error)) (rerr error) {
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return err
	}
	if _, err := os.Stat(string(dd)); g.data != "" && errors.Is(err, fs.ErrNotExist) {
		// Kept in the spool the Recorder makes, not lost: but a --data
		// that names no data dir is most likely a typo. Said once it is
		// kept: a directory that cannot be made keeps nothing, and says
		// so itself.
		defer func() {
			if rerr == nil {
				fmt.Fprintf(g.stderr, "logbook: %s\n", term.Field(hookfast.NewDataDirMessage(string(dd))))
			}
		}()
	}
	if hookfast.ReaderDataDir(string(dd)) {
		// Neither delivered (a reader takes no hooks) nor kept (it never
		// delivers a spool): said, exit 1.
		return fmt.Errorf("%s: %s", name, hookfast.ReaderDataDirMessage(string(dd)))
	}
	r := hookrecord.Recorder{
		Spool: dd.path("spool"), MaxPayload: maxHookPayload, Timeout: hookTimeout, Warn: g.stderr,
		Rules: func() (*claude.Redactor, error) {
			p, err := dd.parser()
			if err != nil {
				return nil, err
			}
			return p.Redactor(), nil
		},
		Deliver: func(ctx context.Context, req api.HookRequest) error {
			return hookrecord.Deliver(ctx, dd.dir(), g.reach(), req)
		},
	}
	return r.Record(ctx, name, payload, prepare)
}

// gatedHookArgs reports whether command line args (after the program
// name) ask for a gated hook: --gate (or --gate=V with V not false) is
// among them and they name `hook …`, or no known command at all. Such a
// command line must answer Claude Code even when it cannot run as
// written.
func gatedHookArgs(root *cobra.Command, args []string) bool {
	if !hookfast.Gated(args) {
		return false
	}
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil || cmd == root {
		return true
	}
	return isHookCommand(cmd)
}

// isHookCommand reports whether cmd is `logbook hook` or one under it.
func isHookCommand(cmd *cobra.Command) bool {
	path := cmd.CommandPath()
	return path == "logbook hook" || strings.HasPrefix(path, "logbook hook ")
}

// HelpDropsPayloadMessage is what an ungated `logbook hook …` or
// logbook-hook says, exit 1, when its command line asks for help (-h,
// --help) and a payload is piped in: the payload would be dropped.
const HelpDropsPayloadMessage = "-h/--help with a payload on stdin: the payload was not delivered (help is printed above); take -h/--help out of the hook's command line"

// hookHelpWithPayload returns the usage mistake of an ungated hook
// command line (logbook hook, hook claude, hook codex) that asks for help
// while a payload is piped in, after printing the help on stderr: exit 1
// as the hook's other usage mistakes (never 2, which Claude Code reads as
// "block"), rather than help on stdout with exit 0 and the payload
// dropped unseen. A terminal, or stdin that holds only white space, asks
// for help: it returns nil and the help is printed as usual. A gated one
// is runGatedHook's.
func hookHelpWithPayload(root *cobra.Command, args []string, stdin io.Reader, stderr io.Writer) error {
	if !hookfast.AsksHelp(args) || hookfast.Gated(args) || stdin == nil || hookfast.StdinIsTerminal(stdin) {
		return nil
	}
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return nil
	}
	if !isHookCommand(cmd) {
		return nil
	}
	payload, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil || len(bytes.TrimSpace(payload)) == 0 {
		return nil
	}
	cmd.SetOut(stderr)
	cmd.InitDefaultHelpFlag()
	if err := cmd.Help(); err != nil {
		return err
	}
	return &exitError{code: codeError, err: errors.New(HelpDropsPayloadMessage)}
}

// runGatedHook runs the gated hook command line root was given and makes
// sure it fails closed: when it ends with an error (a flag it does not
// know, a value that does not parse, a data dir it cannot use) or a panic
// before it answered, it answers deny itself, with the reason, and exits
// 0 so that Claude Code reads the answer. Claude Code takes a hook that
// exits 1 as a non-blocking error and runs the tool. With help, the
// command line asks for help with a payload on stdin: the help goes to
// stderr, and the call is denied (help is no verdict); a payload the gate
// does not judge is not delivered, exit 1 with HelpDropsPayloadMessage,
// as without --gate.
func runGatedHook(ctx context.Context, root *cobra.Command, g *globals, help bool) (err error) {
	out := &hookgate.AnswerWriter{W: g.stdout}
	g.stdout = out
	// What the command reads of the payload is kept (up to the most a
	// payload may hold), so that a deny given for it below answers the
	// payload's own event, or none for an event the gate does not judge.
	seen := &cappedBuffer{max: maxHookPayload + 1}
	if g.stdin != nil {
		g.stdin = io.TeeReader(g.stdin, seen)
	}
	root.SetOut(out)
	if help {
		root.SetOut(g.stderr)
	}
	failClosed := func(why string) {
		if out.Written {
			return
		}
		var payload []byte
		if g.stdin != nil {
			io.Copy(io.Discard, io.LimitReader(g.stdin, int64(maxHookPayload+1-seen.b.Len())))
			payload = seen.b.Bytes()
		}
		event, gated := hookfast.GateEvent(payload)
		if !gated {
			return // no deny to give: it fails as the recorder would
		}
		why = hookrecord.RedactMessage(hookRedactor(g), why)
		fmt.Fprintf(g.stderr, "logbook hook --gate: deny: %s\n", why)
		out.Write(gate.ClaudeAnswer(event, gate.FailClosed(why)))
		err = nil
	}
	defer func() {
		if r := recover(); r != nil {
			failClosed(fmt.Sprintf("the gate hook failed: %v", r))
		}
	}()
	if err = root.ExecuteContext(ctx); err != nil {
		why := "the gate hook could not run: " + userMessage(err)
		if exitCode(err) == codeUsage {
			why = "the gate hook's command line in Claude Code's settings is wrong: " + userMessage(err) + "; fix the hook's command (see `logbook hook claude --help`)"
		}
		failClosed(why)
	} else if help {
		failClosed(hookfast.HelpIsNoVerdict)
		if !out.Written && len(bytes.TrimSpace(seen.b.Bytes())) > 0 {
			// A payload the gate does not judge (a prompt, a session's
			// start, a tool's result): no deny answers it, and it was
			// not recorded; said as the ungated hook says it, exit 1.
			return &exitError{code: codeError, err: errors.New(HelpDropsPayloadMessage)}
		}
	}
	if err != nil && exitCode(err) == codeUsage {
		return &exitError{code: codeError, err: err}
	}
	return err
}

// cappedBuffer keeps the first max bytes written to it and takes the
// rest without keeping it.
type cappedBuffer struct {
	b   bytes.Buffer
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// hookRedactor returns the redaction rules of g's data dir (redact.txt
// over the built-in ones), or the built-in ones when the data dir or its
// rules cannot be read: what the hook redacts its messages by.
func hookRedactor(g *globals) *claude.Redactor {
	if dd, err := resolveDataDir(g.data); err == nil {
		if p, err := dd.parser(); err == nil {
			return p.Redactor()
		}
	}
	return redact.Default()
}
