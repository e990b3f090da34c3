package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

func commandCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "command", Short: "Read, feed or stop one command run by a worker"}
	var (
		after  int64
		follow bool
		raw    bool
	)
	output := &cobra.Command{
		Use:   "output ID",
		Short: "Print a command's output so far, and with --follow until it ends",
		Long: `output prints command ID's output as stored on the log: stdout (and the
terminal of a --tty command) on stdout, stderr on stderr, then the
command's status on stderr. --after skips the first OFFSET bytes of the
whole output; --follow waits for more until the command ends, and then
exits with the command's exit status, as exec does (128+n for a signal,
126 for a command refused or not run, 127 not found, 1 abandoned); a stop
signal (Ctrl-C) ends the follow with 128+n, the command going on. Only a
running server's workers add to the output: with none answering, --follow
prints the output so far and, when the command has not ended, fails
saying so and with the --after OFFSET to come back with.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if after < 0 {
				// A byte offset counts from the output's first byte: no
				// offset is before it (the HTTP API's offset is refused
				// the same way).
				return usageErrorf("command output: --after %d: want a byte offset, 0 or more", after)
			}
			ctx, id := cmd.Context(), args[0]
			return withClient(ctx, g, &id, func(b *backend, cl *worker.Client) error {
				return commandOutput(ctx, g, cl, id, worker.WatchOptions{After: after, Follow: follow}, raw, !b.remote)
			})
		},
	}
	output.Flags().Int64Var(&after, "after", 0, "skip the first OFFSET bytes of the output (0 or more)")
	output.Flags().BoolVarP(&follow, "follow", "f", false, "wait for more output until the command ends")
	output.Flags().BoolVar(&raw, "raw", false, "print the output's exact bytes, escape sequences included (default: made safe for a terminal)")

	var (
		noNewline bool
		eof       bool
		secret    bool
	)
	stdin := &cobra.Command{
		Use:   "stdin ID [TEXT]",
		Short: "Write TEXT and a newline to a running command's standard input",
		Long: `stdin sends TEXT (and a newline, unless -n) to the worker running command
ID, which writes it to the command's standard input. The bytes never enter
the log: only their count and, unless --secret, their SHA-256 do. --eof
closes the input afterwards (Ctrl-D on a terminal). Where the gate reviews
input (a session in auto mode, or a policy rule for "stdin"), it is
written only once allowed: while the review is open, stdin says on stderr
which review it waits for and how to answer it (logbook review allow|deny
ID --reason R); a deny or a review that times out writes nothing.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var data []byte
			if len(args) == 2 {
				data = []byte(args[1])
				if !noNewline {
					data = append(data, '\n')
				}
			} else if !eof {
				return errors.New("command stdin: give TEXT, or --eof to close the input")
			}
			return withClient(cmd.Context(), g, &args[0], func(b *backend, cl *worker.Client) error {
				if err := reviewStdin(cmd.Context(), b, cl, args[0], data, secret, g.stderr); err != nil {
					return err
				}
				n, err := cl.Stdin(cmd.Context(), args[0], data, worker.StdinOptions{Withhold: secret, EOF: eof})
				if err != nil {
					return err
				}
				return answer(g, map[string]any{"id": args[0], "bytes": n, "eof": eof}, "wrote %d bytes to command %s\n", n, args[0])
			})
		},
	}
	stdin.Flags().BoolVarP(&noNewline, "no-newline", "n", false, "do not add a newline to TEXT")
	stdin.Flags().BoolVar(&eof, "eof", false, "close the command's standard input after writing")
	stdin.Flags().BoolVar(&secret, "secret", false, "do not record the SHA-256 of TEXT (for a password or a token)")

	var reason string
	stop := &cobra.Command{
		Use:   "stop ID",
		Short: "Stop a command: SIGTERM to its process group, SIGKILL after the grace",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTyped("--reason", reason, maxStopReason); err != nil {
				return err
			}
			reason, err := redactTyped(g, reason, maxStopReason)
			if err != nil {
				return err
			}
			return withClient(cmd.Context(), g, &args[0], func(_ *backend, cl *worker.Client) error {
				if err := cl.Stop(cmd.Context(), args[0], personActor(), reason); err != nil {
					return err
				}
				_, err := fmt.Fprintf(g.stdout, "stop requested for command %s\n", args[0])
				return err
			})
		},
	}
	stop.Flags().StringVar(&reason, "reason", "user", "why, as recorded on the log")
	cmd.AddCommand(output, stdin, stop)
	return cmd
}

// commandOutput prints command id's output from opts.After on (and with
// opts.Follow until it ends) and then its status on stderr; raw prints
// the exact bytes, g.json a JSON line a chunk and the status as JSON.
// direct is set when cl reads the data dir's log directly, on a server
// of this process's own (no `logbook serve` answered): no worker reaches
// that log, so the output cannot grow while it is read, and a follow of
// a command that has not ended prints the output so far and fails
// saying so, rather than wait for an end nothing can append.
func commandOutput(ctx context.Context, g *globals, cl *worker.Client, id string, opts worker.WatchOptions, raw, direct bool) error {
	printer := &term.Output{Stdout: g.stdout, Stderr: g.stderr, Raw: raw}
	defer printer.Close()
	print := printer.Print
	if g.json {
		enc := json.NewEncoder(g.stdout)
		print = func(c worker.Chunk) error {
			printer.Pos = c.Pos + int64(len(c.Data)) // where a come back resumes, as Print keeps it
			return enc.Encode(c)
		}
	}
	follow := opts.Follow
	if direct {
		opts.Follow = false
	}
	st, err := cl.Watch(ctx, id, opts, print)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			// A stop signal: main makes it "command output interrupted
			// by SIGINT", exit 128+n, the command going on.
			printer.Close()
			if _, ok := stoppedBy(ctx); ok {
				return err
			}
			return nil
		}
		if natslog.Unreachable(err) {
			printer.Close()
			return fmt.Errorf("command output %s: the connection to the log's server closed before the command ended (did `logbook serve` stop?); the command may still run: come back with `logbook command output %s --follow --after %d`",
				id, id, max(opts.After, printer.Pos))
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			printer.Close()
			return fmt.Errorf("command output %s: the log's server stopped answering before the command ended (is `logbook serve` stopped, or the machine overloaded?); the command may still run: come back with `logbook command output %s --follow --after %d`",
				id, id, max(opts.After, printer.Pos))
		}
		return err
	}
	if follow && direct && !st.Ended() {
		printer.Close()
		return fmt.Errorf("command output %s: no server answers for the data dir, and only through one does a worker add to a command's output (did `logbook serve` stop?); the command may still run: start `logbook serve` and come back with `logbook command output %s --follow --after %d`",
			id, id, max(opts.After, printer.Pos))
	}
	if g.json {
		return json.NewEncoder(g.stdout).Encode(map[string]any{"command": st})
	}
	printer.Close()
	if st.Ended() && opts.After > st.OutputBytes {
		// Nothing is at or after the offset asked for: say so, or an
		// offset mistyped reads as a command that printed nothing.
		fmt.Fprintf(g.stderr, "logbook: command %s: --after %d is past the end of its output (%s): nothing printed\n", st.ID, opts.After, term.Plural(int(st.OutputBytes), "byte"))
	}
	if follow && st.Ended() {
		// Followed to its end, as exec waits for it: the command's own
		// exit status (worker.ExitStatus), its status line said once.
		if code, _ := worker.ExitStatus(st); code != 0 {
			return &exitError{code: code, err: fmt.Errorf("command %s %s", st.ID, term.Safe(term.CommandStatus(st)))}
		}
	}
	if !direct || st.Ended() {
		fmt.Fprintf(g.stderr, "logbook: command %s %s\n", st.ID, term.Safe(term.CommandStatus(st)))
		return nil
	}
	// Nothing runs it now: say what the log last recorded, not that it
	// runs.
	status := "was last recorded as " + st.Status
	if st.Status == command.StatusStarted {
		status += fmt.Sprintf(" on %s (worker %s)", st.Host, st.Worker)
	}
	fmt.Fprintf(g.stderr, "logbook: command %s %s\nlogbook: %s\n", st.ID, term.Safe(status), noServeText(1))
	return nil
}

// noServeNote says on stderr, when b read the data dir's log on a server
// of this process's own (no serve answered; not through a socket) and
// some of cs have not ended, that nothing runs them now: with no serve
// for the data dir no worker reaches its log, so a command listed as
// started or waiting is as the log last recorded it.
func noServeNote(g *globals, b *backend, cs []command.State) {
	if b == nil || b.remote || b.socket != "" {
		return
	}
	n := 0
	for _, c := range cs {
		if !c.Ended() {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(g.stderr, "logbook: %s\n", noServeText(n))
	}
}

// noServeText is what noServeNote says of n commands not ended.
func noServeText(n int) string {
	what := "the " + term.Plural(n, "command") + " shown started or waiting are as the log last recorded them"
	if n == 1 {
		what = "the command shown started or waiting is as the log last recorded it"
	}
	return "no serve runs for this data dir, so no worker runs its commands now: " + what +
		"; one whose worker went with its serve is marked abandoned, and a waiting one runs, once `logbook serve` runs again"
}

// maxStopReason is the most bytes of a command stop's reason taken, as
// of a session end's.
const maxStopReason = maxSessionReason

// withClient runs fn with the backend and a worker client on the data
// dir's log, *id resolved first to the command it names (a unique
// prefix).
func withClient(ctx context.Context, g *globals, id *string, fn func(*backend, *worker.Client) error) error {
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	defer b.Close()
	if *id, err = resolveID(ctx, b, events.KindCommand, *id); err != nil {
		return err
	}
	cl, err := newCommandClient(b)
	if err != nil {
		return err
	}
	return fn(b, cl)
}

func commandsCmd(g *globals) *cobra.Command {
	var (
		sess   string
		active bool
	)
	cmd := &cobra.Command{
		Use:   "commands",
		Short: "List commands, of one session or all, optionally only the active ones",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAPI(cmd.Context(), g, func(b *backend, call api.Caller) error {
				if sess != "" {
					var err error
					if sess, err = resolveID(cmd.Context(), b, events.KindSession, sess); err != nil {
						return err
					}
				}
				out, err := api.ListCommands(cmd.Context(), call, api.CommandsRequest{Session: sess, Active: active}, 0)
				if err != nil {
					return err
				}
				if err := emit(g, out, func(w io.Writer) error { return term.Commands(w, out, true) }); err != nil {
					return err
				}
				noServeNote(g, b, out)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&sess, "session", "", "only the commands of this session")
	cmd.Flags().BoolVar(&active, "active", false, "only active commands (waiting for a worker or running)")
	return cmd
}
