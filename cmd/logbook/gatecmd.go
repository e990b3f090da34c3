package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/gate/hookgate"
	"github.com/logbook-dev/logbook/adapters/hookrecord"
	"github.com/logbook-dev/logbook/adapters/servelog"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/adapters/worker"
	wsadapter "github.com/logbook-dev/logbook/adapters/workspace"
	"github.com/logbook-dev/logbook/cmd/internal/hookfast"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// gateFlags are serve's flags for the gate.
type gateFlags struct {
	reviewer string
	budget   time.Duration
}

func (f *gateFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.reviewer, "reviewer", "", `reviewer program for actions the policy sends to review, run with /bin/sh -c: the request as JSON on stdin, the answer as JSON on stdout (see README); without it a person answers with "logbook review allow" or "logbook review deny"`)
	cmd.Flags().DurationVar(&f.budget, "review-budget", gate.DefaultBudget, "how long a review waits for the reviewer or a person before it is decided timed_out, at most 5m, the API's limit on one request (0: the default)")
}

func (f gateFlags) check() error {
	if f.budget <= 0 || f.budget > gate.MaxWait {
		return usageErrorf("--review-budget %v: want 1ms to %v, the API's limit on one request (0: the default, %v)", f.budget, gate.MaxWait, gate.DefaultBudget)
	}
	return nil
}

// gateService puts the gate on the API beside svc's verbs: sessions
// decided by svc's executor, the data dir's policy, f's budget and
// reviewer, what it notices logged to stderr (serve's log, at the level
// a "WARN: " or "INFO: " it begins with gives it), and the check runs of
// the workspaces for require_check.
func gateService(b *backend, svc *api.Service, store *projections.Store, f gateFlags, stderr io.Writer) *gate.Service {
	return gate.ForService(svc, gate.ServeConfig{Log: b.log, Store: store, DataDir: string(b.dd), Budget: f.budget, Reviewer: f.reviewer,
		Logf:   func(format string, args ...any) { servelog.SayPart(stderr, "gate", fmt.Sprintf(format, args...)) },
		Checks: wsadapter.GateChecks(store, func(ctx context.Context) error { return store.CatchUp(ctx, b.log) })})
}

// checkPolicy refuses a data dir policy file that does not parse, naming
// the line and column.
func checkPolicy(dd dataDir) error {
	var ps gate.Policies
	return ps.Load(dd.path(gate.PolicyFile))
}

func policyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Check the gate's policy files"}
	check := &cobra.Command{
		Use:   "check [FILE...]",
		Short: "Parse policy files (default: the data dir's policy.toml and ./.logbook/policy.toml) and name the line and column of the first fault",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseEmptyArg("policy check", "FILE", "name a policy file, or none for the default ones", args); err != nil {
				return err
			}
			if len(args) == 0 {
				dd, err := resolveDataDir(g.data)
				if err != nil {
					return err
				}
				args = []string{dd.path(gate.PolicyFile), filepath.Join(gate.ProjectPolicyDir, gate.PolicyFile)}
			}
			bad, err := gate.CheckFiles(args, len(cmd.Flags().Args()) > 0,
				func(p string, warnings []*gate.PolicyError) {
					for _, w := range warnings {
						fmt.Fprintf(g.stderr, "warning: %v\n", w)
					}
					fmt.Fprintf(g.stdout, "%s: ok\n", p)
				}, func(err error) { fmt.Fprintln(g.stderr, err) })
			if err != nil {
				return err
			}
			if bad > 0 {
				return fmt.Errorf("policy check: %s not parse", term.Plural(bad, "file does", "files do"))
			}
			return nil
		},
	}
	cmd.AddCommand(check)
	return cmd
}

// sweepReviews decides the gate reviews a server that stopped left open,
// once the projection has caught up.
func sweepReviews(ctx context.Context, gs *gate.Service, stderr io.Writer) {
	if err := gs.CaughtUp(ctx); err != nil {
		servelog.Say(stderr, fmt.Sprintf("logbook serve: open reviews not swept: %v", err))
		return
	}
	n, err := gate.SweepAll(ctx, gs.Gate, gs.Store, "the server stopped while the review was pending; no hook waits for it any more")
	if err != nil {
		servelog.Say(stderr, fmt.Sprintf("logbook serve: sweep open reviews: %v", err))
	}
	if n > 0 {
		fmt.Fprintf(stderr, "logbook serve: %s left open by a stopped server decided timed_out or unavailable\n", term.Plural(n, "review"))
	}
}

// hookClaudeGate records one hook payload like hookClaude, asks the
// server's gate for a verdict and prints it in Claude Code's contract. It
// fails closed: no server, no answer within budget, a bad payload, an
// error or a panic in the hook → a deny with the reason, exit 0.
func hookClaudeGate(ctx context.Context, g *globals, budget time.Duration) (err error) {
	event, gated := gate.EventPreToolUse, true
	answer := func(v gate.Verdict) { g.stdout.Write(gate.ClaudeAnswer(event, v)) }
	deny := func(why string) {
		// why may quote the payload (a field a check refused): the agent
		// and the user read it redacted.
		why = hookrecord.RedactMessage(hookRedactor(g), why)
		fmt.Fprintf(g.stderr, "logbook hook --gate: deny: %s\n", why)
		answer(gate.FailClosed(why))
	}
	defer func() {
		if r := recover(); r != nil {
			if !gated {
				err = fmt.Errorf("hook claude: failed: %v", r)
				return
			}
			deny(fmt.Sprintf("the gate hook failed: %v", r))
			err = nil
		}
	}()
	payload, err := io.ReadAll(io.LimitReader(g.stdin, maxHookPayload+1))
	if err != nil {
		deny("read the hook payload: " + err.Error())
		return nil
	}
	event, gated = hookfast.GateEvent(payload)
	if !gated {
		// No verdict to give for this event: it is recorded, as the
		// recorder records it, and never blocks.
		g2 := *g
		g2.stdin = bytes.NewReader(payload)
		return hookClaude(ctx, &g2)
	}
	if budget <= 0 {
		budget = gate.DefaultBudget
	}
	ask := gateAsk
	if sock := g.socketPath(); sock != "" {
		ask = gateViaSocket(sock)
	}
	v, err := ask(ctx, g, payload, budget)
	if err != nil {
		deny(err.Error())
		return nil
	}
	if v.Decision != gate.DecideNone {
		answer(v)
	}
	return nil
}

// gateAsk sends the payload to the server's gate (hookgate.Asker.Ask)
// with g's data dir, credentials and server: the spool the payload is
// kept in when the server does not take it, and the reason a deny gives.
func gateAsk(ctx context.Context, g *globals, payload []byte, budget time.Duration) (gate.Verdict, error) {
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return gate.Verdict{}, err
	}
	if hookfast.ReaderDataDir(string(dd)) {
		// A reader has no gate, and its spool is never delivered: a
		// deny that says where the gate is, nothing kept.
		return gate.Verdict{}, errors.New(hookfast.ReaderDataDirMessage(string(dd)))
	}
	a := &hookgate.Asker{
		SpoolDir:   dd.path("spool"),
		MaxPayload: maxHookPayload,
		Budget:     budget,
		Server:     hookgate.DataDirServer(dd.dir(), g.reach()),
		Redact:     func(msg string) string { return hookrecord.RedactMessage(hookRedactor(g), msg) },
		Warnf:      func(format string, args ...any) { fmt.Fprintf(g.stderr, "logbook hook: "+format+"\n", args...) },
		Message:    userMessage,
	}
	return a.Ask(ctx, payload)
}

func reviewCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "review", Short: "List the gate's open reviews and answer them"}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the open gate reviews of every session, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAPI(cmd.Context(), g, func(_ *backend, call api.Caller) error {
				var out gate.ReviewsReply
				if err := call(cmd.Context(), gate.VerbReviews, gate.ReviewsRequest{}, &out); err != nil {
					return err
				}
				return emit(g, out, func(w io.Writer) error { return term.Reviews(w, out.Reviews, time.Now()) })
			})
		},
	}
	cmd.AddCommand(list, reviewAnswerCmd(g, events.VerdictAllow), reviewAnswerCmd(g, events.VerdictDeny))
	return cmd
}

// maxReviewReason is the most bytes of a review's reason kept, as the
// HTTP API keeps.
const maxReviewReason = gate.MaxReason

func reviewAnswerCmd(g *globals, verdict string) *cobra.Command {
	var reason, sess string
	cmd := &cobra.Command{
		Use:   verdict + " ID --reason R",
		Short: "Answer " + verdict + " to an open gate review (its id or a unique prefix); the first answer wins, a late one is refused naming it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkTyped("--reason", reason, maxReviewReason); err != nil {
				return err
			}
			reason, err := redactTyped(g, reason, maxReviewReason)
			if err != nil {
				return err
			}
			req := gate.DecideRequest{Session: sess, ID: args[0], Verdict: verdict, Reason: reason, Actor: personActor(), Ref: ulid.Make().String()}
			return withAPI(cmd.Context(), g, func(b *backend, call api.Caller) error {
				if !b.remote && b.socket == "" {
					// Only serve's gate waits for a verdict: with none
					// running, every hook that asked has denied its call,
					// and an answer here would be recorded for a call
					// that never ran.
					return fmt.Errorf("no serve runs for %s: no hook waits for a verdict (one that was waiting has denied its call); start serve, which decides the reviews left open unavailable", b.dd)
				}
				var err error
				if req.Session, req.ID, err = resolveReview(cmd.Context(), b, call, req.Session, req.ID); err != nil {
					return err
				}
				var out gate.DecideReply
				if err := call(cmd.Context(), gate.VerbReviewDecide, req, &out); err != nil {
					if errors.Is(err, events.ErrMalformed) {
						// An id that names no one review: several sessions'
						// or a prefix of several, open or decided.
						return usageErrorf("%s", userMessage(err))
					}
					return err
				}
				// The winner's reason is typed text (this one's or a rival
				// answer's): no escape sequence of it reaches the terminal.
				return answer(g, out, "review %s of session %s: %s\n", term.Field(out.Review.ID), term.Field(out.Session), term.Field(out.Review.Winner()))
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, in a few words (required)")
	cmd.Flags().StringVar(&sess, "session", "", "the session holding the review, an id or a unique prefix (when the review's id is not unique)")
	cmd.MarkFlagRequired("reason")
	return cmd
}

func sessionModeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "mode ID MODE",
		Short: "Set a session's permission mode (read_only, workspace_write, auto, full_access) on a person's word",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[1] {
			case events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeAuto, events.ModeFullAccess:
			default:
				return usageErrorf("unknown mode %q: want %s, %s, %s or %s", args[1], events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeAuto, events.ModeFullAccess)
			}
			req := gate.ModeRequest{ID: args[0], Mode: args[1], Actor: personActor(), Ref: ulid.Make().String()}
			return withSession(cmd.Context(), g, args[0], func(_ *backend, call api.Caller, id string) error {
				req.ID = id
				var out gate.ModeReply
				if err := call(cmd.Context(), gate.VerbSessionMode, req, &out); err != nil {
					return err
				}
				return answer(g, out, "session %s: mode %s (revision %d)\n", id, out.Mode, out.Revision)
			})
		},
	}
}

// reviewStdin asks the gate about non-empty input for command id
// (gate.AskStdin), on a running server only. While the review is open,
// stderr is told once which review the input waits for and how to
// answer it.
func reviewStdin(ctx context.Context, b *backend, cl *worker.Client, id string, data []byte, secret bool, stderr io.Writer) error {
	if len(data) == 0 || !b.remote {
		return nil
	}
	st, err := cl.Command(ctx, id)
	if err != nil {
		return fmt.Errorf("command stdin: %w", err)
	}
	return gate.AskStdin(ctx, b.call, st.Session, id, data, secret, func(rid string, d time.Duration) {
		budget := "the server's --review-budget"
		if d > 0 {
			budget = d.String()
		}
		fmt.Fprintf(stderr, "logbook command stdin: the input waits for review %s (up to %s); answer it with `logbook review allow %s --reason R` or `logbook review deny %s --reason R`\n", rid, budget, rid, rid)
	})
}

// resolveReview returns the session and review that sess (a session id
// or a unique prefix of one; "" for any session) and id (a review id or
// a unique prefix of the reviews' ids) name. An id several open reviews
// have or begin with is a usage error listing them. Any other id is
// passed on as it is: the gate matches it against the decided reviews
// too (a whole id or a unique prefix), so an id or prefix of one open
// and one decided review is refused as naming no one review
// (events.ErrMalformed) rather than taken for the open one, and it
// answers for a review decided before (naming who decided it) or for
// one it does not know.
func resolveReview(ctx context.Context, b *backend, call api.Caller, sess, id string) (string, string, error) {
	if id == "" {
		return "", "", usageErrorf("want a review id (or a prefix of one; logbook review list shows them)")
	}
	if sess != "" {
		var err error
		if sess, err = resolveID(ctx, b, events.KindSession, sess); err != nil {
			return "", "", err
		}
	}
	var open gate.ReviewsReply
	if err := call(ctx, gate.VerbReviews, gate.ReviewsRequest{}, &open); err != nil {
		return "", "", err
	}
	cands, exact := gate.MatchReviews(open.Reviews, sess, id)
	if len(cands) <= 1 {
		return sess, id, nil
	}
	return "", "", usageErrorf("%s", term.AmbiguousReviews(cands, id, exact))
}
