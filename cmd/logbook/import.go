package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/ingest"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/term"
)

// agents lists the agents Logbook knows: `logbook import <verb>` and
// serve --watch are built from it, and serve --watch asks them in this
// order whether a folder is theirs (ingest.Owner). A new agent is one
// line here: its package's Descriptor.
func agents() []ingest.Agent {
	return []ingest.Agent{
		claude.Descriptor(),
		codex.Descriptor(),
	}
}

func importCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import agent transcripts"}
	for _, a := range agents() {
		cmd.AddCommand(importAgentCmd(g, a))
	}
	return cmd
}

// importAgentCmd returns `logbook import <a.Verb>`: it imports the
// files its PATHs name (a.DefaultRoots when it names none and the agent
// allows that).
func importAgentCmd(g *globals, a ingest.Agent) *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use: a.Verb + " PATH...", Short: a.Short, Long: a.Long,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				home, _ := os.UserHomeDir()
				if args = a.DefaultRoots(os.Getenv, home); len(args) == 0 {
					return fmt.Errorf("no PATH named, and where %s keeps its files is unknown", a.Name)
				}
			}
			return runImport(cmd.Context(), g, a, args, o)
		},
	}
	if a.PathOptional {
		cmd.Use, cmd.Args = a.Verb+" [PATH...]", cobra.ArbitraryArgs
	}
	importFlags(cmd, &o, a.Workers, a.File)
	return cmd
}

// importOptions are the flags every `logbook import <agent>` takes.
type importOptions struct {
	workers     int  // --workers: files read and parsed at once, at least 1
	skipInvalid bool // --skip-invalid
	asNew       bool // --as-new
}

// importFlags adds to cmd the flags every `logbook import <agent>` takes,
// set into o: workers says what --workers counts, file names one file of
// the agent's ("rollout").
func importFlags(cmd *cobra.Command, o *importOptions, workers, file string) {
	cmd.Flags().IntVar(&o.workers, "workers", 4, workers)
	bound(cmd.Flags(), "workers", 1, maxWorkers)
	cmd.Flags().BoolVar(&o.skipInvalid, "skip-invalid", false, "record a line that does not parse (without signals) and go on, instead of stopping that file there")
	cmd.Flags().BoolVar(&o.asNew, "as-new", false, "import a "+file+" that changed under Logbook (truncated or rewritten) as a new session linked to the one that imported it")
}

// runImport imports the files paths name as agent a's
// (ingest.Import.Plan, ingest.Planned.Run), and prints the summary
// (--json: as JSON) with each warning, note and error on stderr. It
// returns a usage error when a path is empty, and an *exitError when a
// named path cannot be imported or a file stopped early.
func runImport(ctx context.Context, g *globals, a ingest.Agent, paths []string, o importOptions) error {
	if err := refuseEmptyArg("import "+a.Verb, "PATH", "name a "+a.File+", or a folder of them", paths); err != nil {
		return err
	}
	var private []string // the data dir, whose files the import refuses to read
	if dd, err := resolveDataDir(g.data); err == nil {
		private = []string{string(dd)}
	}
	plan, err := a.Import.Plan(paths, private)
	if ne, ok := errors.AsType[*ingest.NamedError](err); ok {
		if g.json {
			_ = writeJSON(g.stdout, ingest.Summary{Files: []ingest.SummaryFile{}, Errors: ne.Paths})
		} else if len(ne.Paths) > 1 {
			term.ImportErrors(g.stderr, ne.Paths)
		}
		return &exitError{code: 1, err: ne}
	} else if err != nil {
		return err
	}
	ingest.Mark(ctx, ingest.MarkPlanned, "")
	if plan.Warning != "" {
		fmt.Fprintf(g.stderr, "warning: %s\n", plan.Warning)
	}
	b, err := openBackend(ctx, g)
	if err != nil {
		return err
	}
	// Deferred first, so that it marks the end once the log is closed.
	defer ingest.Mark(ctx, ingest.MarkDone, "")
	defer b.Close()
	env, err := importEnv(b, g, o)
	if err != nil {
		return err
	}
	// Credentials whose role may not append the agent's lines (a
	// worker's, a reader's) refuse the import once, before any file is
	// read, rather than each file at its first line.
	if b.log != nil {
		if err := b.log.CheckAppend(ctx, a.LineType, nil); err != nil {
			return fmt.Errorf("import %s: %w", a.Verb, err)
		}
	}
	ingest.Mark(ctx, ingest.MarkConnected, "")
	// A request the server never answered because it went away ends
	// in a timeout; the connection is down by then.
	lost := func(err error) bool {
		return natslog.ServerGone(err) || b.srv == nil && b.nc != nil && !b.nc.IsConnected() &&
			(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout))
	}
	sum, err := plan.Run(ctx, env, lost, g.stderr)
	if err != nil {
		return err
	}
	noun := a.Import.Noun
	if g.json {
		if err := writeJSON(g.stdout, sum); err != nil {
			return err
		}
	} else {
		term.ImportSummary(g.stdout, g.stderr, sum, noun)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	paused := ""
	if len(sum.Errors) > sum.Diverged {
		paused = b.diskPaused(ctx)
	}
	if err := sum.Err(noun, paused); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// importEnv is what an import opens its agent's ingester with on b: the
// data dir's redaction rules, its private files and its import index
// (import-index.json, for the log's stream as it is now), the flags o,
// and warnings on stderr.
func importEnv(b *backend, g *globals, o importOptions) (ingest.ImportEnv, error) {
	host, _ := os.Hostname()
	parser, err := b.dd.parser()
	if err != nil {
		return ingest.ImportEnv{}, err
	}
	return ingest.ImportEnv{
		Env:     ingest.Env{Log: b.log, Reg: b.reg, Redaction: parser, Host: host, Private: b.dd.private()},
		Workers: max(o.workers, 1), SkipInvalid: o.skipInvalid, AsNew: o.asNew,
		IndexPath: b.dd.path("import-index.json"),
		Incarnation: func(ctx context.Context) (string, error) {
			id, err := b.log.Identity(ctx)
			if err != nil {
				return "", err
			}
			return id.Incarnation(), nil
		},
		Warn: func(msg string) { fmt.Fprintf(g.stderr, "warning: %s\n", msg) },
	}, nil
}
