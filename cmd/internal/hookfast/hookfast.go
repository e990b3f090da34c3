// Package hookfast is `logbook-hook`, the small binary Claude Code runs
// for every hook event: the common path of `logbook hook claude` without
// the server, the store, the metrics or the command line it does not use,
// so that its start-up costs a few milliseconds, not tens.
//
// With $LOGBOOK_SOCKET and no --data it sends the payload to that serve's
// system socket instead, with no spool (viaSystem).
//
// It handles a payload on the data dir's own server: with nothing waiting
// in the spool it sends the payload to the server's hook socket
// (adapters/hooksock, <data dir>/hook.sock) and exits once the server
// has it in its intake journal (adapters/api.Intake), to be appended
// right after; with entries waiting, or no server answering, it spools
// the payload (adapters/claude/hookspool.Spool) for the server to
// deliver. A payload over the send cap (256 KiB) is handed to `logbook
// hook claude`, which cuts it: the cut records the original's SHA-256,
// and this binary links no crypto; with no logbook to run, it is
// spooled as it came, checked (its cut fits) but not cut, and serve's
// drain cuts it as logbook would. A server that does not listen on the socket (a reader, an
// older logbook) gets the payload from `logbook hook claude`. Everything
// else (a payload it cannot use, --nats-url, --creds, a gate, or any flag
// it does not know) it hands to `logbook hook claude` with the same
// arguments and payload, so the two behave the same. When it cannot run
// logbook (neither beside this binary nor on $PATH) it keeps the promises
// logbook would: a gated call is answered deny, and a payload it cannot
// use is kept in the spool, for `logbook serve` to refuse and set aside,
// redacted, in the spool's rejected/ folder. It links no redaction rules
// (adapters/claude/hookspool).
package hookfast

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/hooksock"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay/fieldesc"

	"github.com/logbook-dev/logbook/adapters/datadir/locate"
)

// The wire shapes of the API this package speaks, as adapters/api
// defines them (api.HookRequest and the reply, which begins so when it
// succeeded). A test in cmd/logbook runs this package against a real
// server, so a change there fails here.
const dataPrefix = `{"data":`

type hookRequest struct {
	ID      string          // the observation's ULID
	Text    string          // the prepared payload; omitted when ""
	Process *events.Process // the agent process; null when none was found
}

// appendJSON appends r to b as JSON, byte for byte as hooksock.Marshal
// encodes an api.HookRequest with these values (a test compares them),
// without encoding/json's reflection, whose first use would cost every
// hook a good part of a millisecond.
func (r hookRequest) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = hooksock.AppendString(b, r.ID)
	if r.Text != "" {
		b = append(b, `,"text":`...)
		b = hooksock.AppendString(b, r.Text)
	}
	b = append(b, `,"process":`...)
	p := r.Process
	if p == nil {
		b = append(b, "null"...)
		return append(b, '}')
	}
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, int64(p.PID), 10)
	b = append(b, `,"start":`...)
	b = strconv.AppendUint(b, p.Start, 10)
	b = append(b, `,"host":`...)
	b = hooksock.AppendString(b, p.Host)
	b = append(b, `,"boot_id":`...)
	b = hooksock.AppendString(b, p.Boot)
	if p.PidNS != "" {
		b = append(b, `,"pid_ns":`...)
		b = hooksock.AppendString(b, p.PidNS)
	}
	if p.Comm != "" {
		b = append(b, `,"comm":`...)
		b = hooksock.AppendString(b, p.Comm)
	}
	if len(p.Chain) > 0 {
		b = append(b, `,"chain":[`...)
		for i, r := range p.Chain {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"pid":`...)
			b = strconv.AppendInt(b, int64(r.PID), 10)
			b = append(b, `,"start":`...)
			b = strconv.AppendUint(b, r.Start, 10)
			if r.Comm != "" {
				b = append(b, `,"comm":`...)
				b = hooksock.AppendString(b, r.Comm)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}}"...)
}

// Limits, as `logbook hook claude` has them.
const (
	maxPayload = hookspool.MaxHookRead // bytes read from stdin
	timeout    = 2 * time.Second       // the wait for the server
)

// Main runs `logbook-hook args…` with the payload on stdin and returns
// the exit code: 0 delivered or spooled, 1 a payload refused (by
// `logbook hook claude`, which keeps it aside); a gated call (--gate) is
// 0 with its answer on stdout, a deny when no verdict could be had; 1
// when args name no subcommand and stdin is not a terminal (the payload
// is not delivered: NoSubcommandMessage; never 2, which Claude Code reads
// as "block"); with a terminal, logbook's help. args are the arguments
// after the program name: "claude", optionally after "--data DIR".
// logbook names the full binary to hand other cases to ("" finds
// `logbook` beside this binary, then on $PATH). A data dir that belongs
// to another user than the effective uid is refused before anything is
// created in it (hookspool.Open): exit 1, the error on stderr, nothing
// spooled; a gated call is still answered deny.
func Main(args []string, stdin io.Reader, stderr io.Writer, logbook string) int {
	stderr = lineWriter{stderr}
	if NoSubcommand(args) {
		if !StdinIsTerminal(stdin) {
			// A payload piped in would be dropped: say so, as the
			// hook's usage mistakes are, rather than print help and exit
			// 0; not 2, which would block every call of a hook wired
			// without its subcommand.
			fmt.Fprintf(stderr, "logbook-hook: %s\n", NoSubcommandMessage)
			return 1
		}
		return handOver(args, nil, stderr, logbook, nil) // its help
	}
	if AsksHelp(args) && StdinIsTerminal(stdin) {
		// No payload waits: logbook prints its help to the terminal.
		return showHelp(args, stdin, stderr, logbook)
	}
	if w := subcommand(args); w != "" && w != "claude" && w != "codex" && !AsksHelp(args) {
		// Handed over, `logbook hook <w>` would name logbook's nested
		// command, not this program's mistake (`logbook-hook hook
		// claude`). 1, as with no subcommand: not 2, which blocks.
		fmt.Fprintf(stderr, "logbook-hook: unknown agent %q: %s\n", w, UnknownAgentMessage)
		return 1
	}
	payload, err := io.ReadAll(io.LimitReader(stdin, maxPayload+1))
	if err != nil {
		fmt.Fprintf(stderr, "logbook-hook: read stdin: %v\n", err)
		return 1
	}
	// The payload's event is read only for a gated hook: an ungated one
	// never needs it, and reading it is the process's first use of
	// encoding/json's decoder.
	if Gated(args) {
		event, gated := GateEvent(payload)
		if gated && AsksHelp(args) {
			// Help is no verdict: Claude Code would run the call by its own
			// permission flow. The help goes to stderr, the deny to stdout.
			help := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--gate" || strings.HasPrefix(a, "--gate=") })
			showHelp(help, bytes.NewReader(nil), stderr, logbook)
			fmt.Fprintf(stderr, "logbook-hook --gate: deny: %s\n", HelpIsNoVerdict)
			os.Stdout.Write(FailClosedAnswer(event, HelpIsNoVerdict))
			return 0
		}
		if !gated {
			// The gate does not answer this event: it is only recorded.
			args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--gate" || strings.HasPrefix(a, "--gate=") })
		}
	}
	data, sock, ok := parseArgs(args)
	if len(payload) > maxPayload {
		return handOver(args, payload, stderr, logbook, fmt.Errorf("payload over %d MiB refused", maxPayload>>20))
	}
	if !ok || os.Getenv("LOGBOOK_NATS_URL") != "" || os.Getenv("LOGBOOK_CREDS") != "" {
		return handOver(args, payload, stderr, logbook, nil)
	}
	if sock == "" && data == "" {
		sock = os.Getenv("LOGBOOK_SOCKET")
	}
	if sock != "" {
		return viaSystem(args, payload, stderr, logbook, sock)
	}
	prepared, err := hookspool.PrepareHook(payload, nil)
	mustCut := errors.Is(err, hookspool.ErrMustCut)
	if err != nil && !mustCut {
		return handOver(args, payload, stderr, logbook, err) // it keeps the payload aside
	}
	if mustCut && canRun(logbook) {
		// Over the send cap: logbook cuts it (this binary links no hash
		// for the cut's sum) and delivers it as it delivers any, so that
		// the server's checks (a redaction rule that matches an id, say)
		// refuse it before the hook exits, not after, in the drain.
		return handOver(args, payload, stderr, logbook, nil)
	}
	dir, err := locate.Path(data)
	if err != nil {
		return handOver(args, payload, stderr, logbook, nil)
	}
	_, serr := os.Stat(dir)
	madeDir := data != "" && errors.Is(serr, fs.ErrNotExist)
	sp, err := hookspool.Open(filepath.Join(dir, "spool"))
	if err != nil {
		fmt.Fprintf(stderr, "logbook-hook: %v\n", err)
		return 1
	}
	if madeDir {
		// Kept, not lost: but a --data that names no data dir is most
		// likely a typo, which no serve will ever drain.
		fmt.Fprintf(stderr, "logbook-hook: %s\n", NewDataDirMessage(dir))
	}
	host, _ := os.Hostname()
	agent, _ := hookspool.AgentProcess(os.Getpid(), host, hookspool.BootID())
	id := hookspool.NewID()
	waiting, err := sp.HasPending()
	if mustCut {
		// Over the send cap with no logbook to cut it, checked (its cut
		// fits) but not cut: this binary links no hash for the cut's
		// sum. serve's drain, which the new entry wakes, cuts it as
		// `logbook hook claude` would have.
		waiting, err = true, nil
	}
	if err == nil && !waiting {
		err = deliver(time.Now().Add(timeout), dir, hookRequest{ID: id, Text: string(prepared), Process: agent})
		if err == nil {
			return 0
		}
		if errors.Is(err, errRefused) {
			return handOver(args, payload, stderr, logbook, err)
		}
		if errors.Is(err, hooksock.ErrNoSocket) {
			// A server that does not listen on the socket (a reader, an
			// older logbook): logbook asks it as it can.
			return handOver(args, payload, stderr, logbook, nil)
		}
	}
	if ReaderDataDir(dir) {
		fmt.Fprintf(stderr, "logbook-hook: %s\n", ReaderDataDirMessage(dir))
		return 1
	}
	if perr := sp.PutAs(id, prepared, agent); perr != nil {
		fmt.Fprintf(stderr, "logbook-hook: %v\n", hookspool.NotRecorded(err, perr))
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "logbook hook: kept in spool: %v\n", err)
	}
	return 0
}

// NewDataDirMessage is what a hook says when its --data named a directory
// that did not exist, which it made to keep the payload in its spool.
func NewDataDirMessage(dir string) string {
	return fmt.Sprintf("the data dir %s did not exist: the hook is kept in its spool there, for a serve on it (`logbook serve --data %s`) to take; is --data right?", dir, dir)
}

// HelpIsNoVerdict is why a gated hook asked for help (-h or --help)
// with a payload on stdin denies the call: the gate's deny for a hook
// command line that cannot answer.
const HelpIsNoVerdict = "the gate hook's command line in Claude Code's settings is wrong: it asks for help (-h or --help), which gives no verdict; fix the hook's command (see `logbook hook claude --help`)"

// AsksHelp reports whether hook arguments args ask for help: -h, --help
// or --help=V with V anything but false, before any "--".
func AsksHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-h" || a == "--help" {
			return true
		}
		if v, ok := strings.CutPrefix(a, "--help="); ok {
			if on, err := strconv.ParseBool(v); err != nil || on {
				return true
			}
		}
	}
	return false
}

// showHelp runs `logbook hook args…` (logbook as handOver finds it) with
// stdin, and its stdout and stderr both on stderr, for the help it
// prints; it returns logbook's exit code (1 when it cannot run).
func showHelp(args []string, stdin io.Reader, stderr io.Writer, logbook string) int {
	if logbook == "" {
		logbook = findLogbook()
	}
	c := exec.Command(logbook, append([]string{"hook"}, args...)...)
	c.Stdin, c.Stdout, c.Stderr = stdin, stderr, stderr
	if f, ok := stdin.(*os.File); ok && StdinIsTerminal(f) {
		c.Stdout = os.Stdout // a person reads it on the terminal
	}
	err := c.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(stderr, "logbook-hook: could not run %s: %s\n", logbook, runFailure(err))
		return 1
	}
	return 0
}

// NoSubcommandMessage is what logbook-hook and `logbook hook` say, exit
// 1, when they are run with a payload on stdin but no subcommand.
const NoSubcommandMessage = "no subcommand: the payload on stdin was not delivered; name the agent that sends it: claude (Claude Code hooks) or codex (Codex CLI notify)"

// UnknownAgentMessage ends what logbook-hook says of a subcommand that
// names no agent it records.
const UnknownAgentMessage = "the payload on stdin was not delivered; name the agent that sends it: claude (Claude Code hooks) or codex (Codex CLI notify)"

// subcommand returns the first word of hook arguments args that is no
// flag nor a flag's value ("" when there is none).
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "--data" || a == "--nats-url" || a == "--creds" || a == "--socket" || a == "--budget":
			i++ // its value
		case !strings.HasPrefix(a, "-"):
			return a
		}
	}
	return ""
}

// NoSubcommand reports whether hook arguments args name no subcommand
// (claude, codex, or any other word for logbook to judge) and ask for
// no help: only flags, "--data DIR" among them, or nothing.
func NoSubcommand(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-h" || a == "--help" || a == "--":
			return false
		case a == "--data" || a == "--nats-url" || a == "--creds":
			i++ // its value
		case !strings.HasPrefix(a, "-"):
			return false
		}
	}
	return true
}

// StdinIsTerminal reports whether stdin is a terminal (a character
// device), where no payload is waiting; any other reader is not.
func StdinIsTerminal(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// parseArgs accepts exactly "claude" and at most one --data DIR or one
// --socket PATH (or --data=DIR, --socket=PATH), before or after it, and
// returns the data dir flag and the socket flag ("" when absent).
func parseArgs(args []string) (data, sock string, ok bool) {
	claude, seen := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, eq := strings.Cut(a, "=")
		switch {
		case a == "claude" && !claude:
			claude = true
		case (name == "--data" || name == "--socket") && !seen && (eq || i+1 < len(args)):
			if !eq {
				val = args[i+1]
				i++
			}
			if val == "" {
				return "", "", false // logbook refuses it, naming the flag
			}
			if name == "--data" {
				data = val
			} else {
				sock = val
			}
			seen = true
		default:
			return "", "", false
		}
	}
	return data, sock, claude
}

// maxSmallFile is the most serve.json may hold (it is a few hundred
// bytes); it is read only if it is a regular file, so a FIFO or a device
// in its place never blocks nor fills memory.
const maxSmallFile = 64 << 10

// serverNamed reports whether data dir dir has a serve.json naming a
// server's URL, as a running `logbook serve` leaves it.
func serverNamed(dir string) bool {
	named, _ := serveJSON(dir)
	return named
}

// serveJSON reads data dir dir's serve.json: named, it names a server's
// URL, as a running `logbook serve` leaves it; reader, that server is
// serve --role reader (datadir.ServeInfo.Reader), which takes no hooks
// and never delivers the spool.
func serveJSON(dir string) (named, reader bool) {
	var si struct {
		URL    string `json:"url"`
		Reader bool   `json:"reader"`
	}
	b, err := hookspool.ReadRegular(filepath.Join(dir, "serve.json"), maxSmallFile)
	if err != nil || json.Unmarshal(b, &si) != nil || si.URL == "" {
		return false, false
	}
	return true, si.Reader
}

// ReaderDataDir reports whether data dir dir is a follower's, where a
// hook must neither deliver nor spool (ReaderDataDirMessage): its
// running serve is --role reader (serve.json says so), or, with none
// running, the last serve there was (stream.json's "reader"). A stopped
// reader's data dir keeps its stream.json; a writer's serve started there
// since has rewritten it.
func ReaderDataDir(dir string) bool {
	named, reader := serveJSON(dir)
	if named {
		return reader
	}
	var rec struct {
		Reader bool `json:"reader"`
	}
	b, err := hookspool.ReadRegular(filepath.Join(dir, "stream.json"), maxSmallFile)
	return err == nil && json.Unmarshal(b, &rec) == nil && rec.Reader
}

// ReaderDataDirMessage is what a hook says, exit 1, keeping nothing, on
// the data dir of a serve --role reader: that serve follows another
// server's log, takes no hooks and never delivers a spool, so a payload
// kept there would wait for good.
func ReaderDataDirMessage(dir string) string {
	return fmt.Sprintf("the payload was not delivered nor kept: the data dir %s is a follower's (its serve runs --role reader, which takes no hooks and never delivers a spool, whether it runs now or not); point the hook's --data at the data dir of the serve that appends to the log", dir)
}

// errRefused is the server refusing the payload as bad input.
var errRefused = errors.New("refused by the server")

// deliver sends req to the server of data dir dir on the data dir's
// hook socket (adapters/hooksock), and waits for the server's answer
// until deadline. A socket nothing listens on (a server killed), or no
// socket and no serve.json (no server), is an error for the caller to
// spool the payload; no socket beside a serve.json that names a server
// (a server without the socket: a reader, an older logbook) is an error
// wrapping hooksock.ErrNoSocket, for the caller to hand the payload to
// logbook; a refusal of the payload wraps errRefused; serve holding its
// appends for want of disk space (code hooksock.CodeHeld) is an error
// saying why and that the spool's copy goes in once the disk frees
// (hooksock.HeldKept). serve.json is read
// only when there is no socket: a server that answers on it runs.
//
// It takes a deadline, not a context: a context's deadline is a runtime
// timer, which starts the network poller and wakes a thread for it, in
// a process that blocks in plain system calls with their own timeouts.
func deliver(deadline time.Time, dir string, req hookRequest) error {
	body := req.appendJSON(make([]byte, 0, len(req.ID)+len(req.Text)+256))
	data, err := hooksock.Call(dir, body, deadline)
	if errors.Is(err, hooksock.ErrNoSocket) && !serverNamed(dir) {
		return fmt.Errorf("no server running (no %s)", filepath.Join(dir, "serve.json"))
	}
	if err != nil {
		return fmt.Errorf("ask server (hook): %w", err)
	}
	if bytes.HasPrefix(data, []byte(dataPrefix)) {
		return nil
	}
	var r struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if err := json.Unmarshal(data, &r); err != nil || r.Error == "" {
		return fmt.Errorf("server answer (hook): %q", data)
	}
	switch r.Code {
	case "malformed", "rejected", "too_large":
		return fmt.Errorf("%w: %s", errRefused, r.Error)
	case hooksock.CodeHeld:
		// Why serve did not take it; the caller keeps it in the spool.
		return fmt.Errorf("%s; %s", r.Error, hooksock.HeldKept)
	}
	return errors.New(r.Error)
}

// handOver runs `logbook hook args…` with payload on its standard input
// and returns its exit code. refused is why the payload is bad input, when
// it is (nil when it was handed over for another reason).
//
// When logbook cannot be run (not beside this binary, not on $PATH), the
// hook still keeps its promises: a gated call (--gate among args) is
// answered deny, exit 0, and kept in the spool with that verdict for serve
// to record (keepDenied); a refused payload is kept in the spool as it
// came (spoolRefused), exit 1: `logbook serve`, draining the spool,
// refuses it too and sets it aside, redacted, in the spool's rejected/
// folder. A gated call whose logbook ends
// without an answer (killed, say) is answered deny too.
func handOver(args []string, payload []byte, stderr io.Writer, logbook string, refused error) int {
	if logbook == "" {
		logbook = findLogbook()
	}
	event, gatedEvent := GateEvent(payload)
	gated := Gated(args) && gatedEvent
	var answer bytes.Buffer
	c := exec.Command(logbook, append([]string{"hook"}, args...)...)
	c.Stdin, c.Stdout, c.Stderr = bytes.NewReader(payload), os.Stdout, stderr
	if lw, ok := stderr.(lineWriter); ok {
		c.Stderr = lw.w // logbook's own lines, as it writes them
	}
	// logbook dies with this process however it ends (SIGKILL too): a
	// gated logbook left waiting would keep its review open for an agent
	// that no longer waits.
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	var sigs chan os.Signal
	if gated {
		c.Stdout = &answer
		// A stop signal goes to logbook, which answers deny at once (and
		// its review is decided so); that answer is printed here, exit 0,
		// as every gated answer is.
		sigs = make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		defer signal.Stop(sigs)
	}
	err := c.Start()
	if err == nil {
		done := make(chan struct{})
		if sigs != nil {
			go func() {
				for {
					select {
					case s := <-sigs:
						_ = c.Process.Signal(s)
					case <-done:
						return
					}
				}
			}()
		}
		err = c.Wait()
		close(done)
	}
	ee, exited := errors.AsType[*exec.ExitError](err)
	if gated {
		if answer.Len() > 0 {
			os.Stdout.Write(answer.Bytes())
			if exited {
				return ee.ExitCode()
			}
			return 0
		}
		if err == nil {
			return 0 // no answer: the agent's own permission flow applies
		}
		why := fmt.Sprintf("the gate hook could not run %s: %s", logbook, runFailure(err))
		if logbook == "logbook" && !exited {
			why = "the gate hook could not find the logbook program (beside logbook-hook, or on $PATH), which decides gated calls; install logbook beside logbook-hook or wire `logbook hook claude --gate`"
		}
		fmt.Fprintf(stderr, "logbook-hook --gate: deny: %s\n", why)
		if refused == nil && !exited {
			// logbook never started, so nothing was kept of the call.
			if err := keepDenied(args, payload, why); err != nil {
				fmt.Fprintf(stderr, "logbook-hook --gate: the call is not recorded: %v\n", err)
			}
		}
		os.Stdout.Write(FailClosedAnswer(event, why))
		return 0
	}
	if err == nil {
		return 0
	}
	if exited {
		return ee.ExitCode()
	}
	fmt.Fprintf(stderr, "logbook-hook: could not run %s: %s\n", logbook, runFailure(err))
	if refused != nil {
		// The refusal may quote the payload, and this binary has no
		// redaction rules: it is printed with every quoted span elided.
		msg := elideQuoted(refused.Error())
		if where, kerr := spoolRefused(args, payload); kerr != nil {
			fmt.Fprintf(stderr, "logbook-hook: %s: refused (not kept: %v)\n", msg, kerr)
		} else {
			fmt.Fprintf(stderr, "logbook-hook: %s: refused; kept in the spool as %s for `logbook serve` to set aside, redacted\n", msg, where)
		}
	}
	return 1
}

// keepDenied keeps a gated call that the hook denied on its own, with no
// logbook program to decide it, in the data dir's spool beside that
// verdict (hookspool.Spool.PutVerdict, then PutAs), as `logbook hook
// claude --gate` keeps one it denies with no server: serve records the call and
// its review, decided by the hook, when it delivers the entry. args are
// the hook's arguments (their --data names the data dir).
func keepDenied(args []string, payload []byte, why string) error {
	prepared, err := hookspool.PrepareHook(payload, nil)
	if err != nil && !errors.Is(err, hookspool.ErrMustCut) { // one over the cap waits uncut, for the drain to cut
		return err
	}
	dir, err := locate.Path(dataFlag(args))
	if err != nil {
		return err
	}
	sp, err := hookspool.Open(filepath.Join(dir, "spool"))
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	agent, _ := hookspool.AgentProcess(os.Getpid(), host, hookspool.BootID())
	id := hookspool.NewID()
	if err := sp.PutVerdict(id, hookspool.FailClosedVerdict(why, time.Now(), 0)); err != nil {
		return err
	}
	return sp.PutAs(id, prepared, agent)
}

// dataFlag returns the value of the --data flag among args ("" when
// absent), in either spelling, wherever it stands.
func dataFlag(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--data="); ok {
			return v
		}
		if a == "--data" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// canRun reports whether logbook, the full binary as Main takes it (""
// finds it as findLogbook does), names a program that can be run: a
// regular, executable file, found on $PATH when it names no path.
func canRun(logbook string) bool {
	if logbook == "" {
		logbook = findLogbook()
	}
	p, err := exec.LookPath(logbook)
	if err != nil {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// findLogbook returns the logbook program beside this binary (its own
// executable's folder) when there is one, else "logbook" for $PATH.
func findLogbook() string {
	self, err := os.Executable()
	if err != nil {
		return "logbook"
	}
	if p := filepath.Join(filepath.Dir(self), "logbook"); p != self {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return "logbook"
}

// runFailure says why a program could not be started, without the Go
// exec package's own words.
func runFailure(err error) string {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return "not found on $PATH"
	case errors.Is(err, os.ErrPermission):
		return "not executable"
	case errors.Is(err, os.ErrNotExist):
		return "no such file"
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return "it ended without an answer (" + ee.ProcessState.String() + ")"
	}
	return err.Error()
}

// spoolRefused keeps a refused payload (at most maxPayload+1 bytes of
// it, as read) in the data dir's spool as an ordinary pending entry, raw
// as every spooled payload is (the spool is private: folder 0700, files
// 0600), and returns its path. `logbook serve`, draining the spool,
// refuses it as the hook did and moves it aside, redacted by the data
// dir's rules, into rejected/, where it blocks nothing. args are the
// hook's arguments (their --data names the data dir).
func spoolRefused(args []string, payload []byte) (string, error) {
	dir, err := locate.Path(dataFlag(args))
	if err != nil {
		return "", err
	}
	sp, err := hookspool.Open(filepath.Join(dir, "spool"))
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	agent, _ := hookspool.AgentProcess(os.Getpid(), host, hookspool.BootID())
	id := hookspool.NewID()
	if err := sp.PutAs(id, payload, agent); err != nil {
		return "", err
	}
	return filepath.Join(sp.Dir(), id+".json"), nil
}

// Gated reports whether hook arguments args ask for a gated call: --gate,
// or --gate=V with V anything but false, before any "--".
func Gated(args []string) bool {
	gated := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--gate" {
			gated = true
		} else if v, ok := strings.CutPrefix(a, "--gate="); ok {
			on, err := strconv.ParseBool(v)
			gated = err != nil || on
		}
	}
	return gated
}

// GateEvent returns the Claude Code hook event a gated call answers for
// payload, and whether the gate answers it at all: PreToolUse and
// PermissionRequest are gated; a payload that names another event is
// only recorded (there is no deny to give for it); one that does not
// parse is answered as PreToolUse, so that it fails closed.
func GateEvent(payload []byte) (event string, gated bool) {
	var head struct {
		Event string `json:"hook_event_name"`
	}
	if json.Unmarshal(payload, &head) != nil {
		return "PreToolUse", true
	}
	switch head.Event {
	case "PreToolUse", "PermissionRequest":
		return head.Event, true
	case "":
		return "PreToolUse", true
	}
	return head.Event, false
}

// FailClosedAnswer returns the deny a gated hook prints on stdout when it
// has no verdict, for Claude Code hook event (PreToolUse or
// PermissionRequest) with why: the bytes adapters/gate.ClaudeAnswer
// gives for gate.FailClosed(why), written here so that this binary does
// not link the gate (a test in cmd/logbook compares the two).
func FailClosedAnswer(event, why string) []byte {
	reason := "Logbook gate: deny by the gate: " + why + ". Outcome " + toldUnavailable
	var v any
	if event == "PermissionRequest" {
		v = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": event, "decision": map[string]any{"behavior": "deny", "message": reason},
		}}
	} else {
		v = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason,
		}}
	}
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// toldUnavailable is adapters/gate's outcome text for a deny with no
// verdict.
const toldUnavailable = "unavailable: no reviewer could run, so no judgement was made; ask the user, do not work around it"

// elideQuoted returns msg with every Go-quoted span ("…", as %q writes
// a field's value) replaced by "…": a refusal may quote its payload, and
// the hook, which has no redaction rules, prints none of it. A '"' that
// opens no well-formed quoted string is kept.
func elideQuoted(msg string) string {
	var b strings.Builder
	for i := 0; i < len(msg); {
		if msg[i] == '"' {
			if q, err := strconv.QuotedPrefix(msg[i:]); err == nil {
				b.WriteString(`"…"`)
				i += len(q)
				continue
			}
		}
		b.WriteByte(msg[i])
		i++
	}
	return b.String()
}

// lineWriter is the writer of logbook-hook's own messages: each Write is
// one line ending in a newline, and every character inside it that could
// end the line, rewrite it on a terminal or reorder it is shown escaped
// as every field of Logbook's text output is (fieldesc.Escape: \n, \x1b,
// \u202e, \xff). A name a message quotes (a --data path, a file the
// spool holds) cannot start a line that passes for another's on the
// agent's screen.
type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(p []byte) (int, error) {
	body, end := p, ""
	if n := len(p); n > 0 && p[n-1] == '\n' {
		body, end = p[:n-1], "\n"
	}
	if _, err := io.WriteString(l.w, fieldesc.Escape(string(body))+end); err != nil {
		return 0, err
	}
	return len(p), nil
}
