package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/cmd/logbook/internal/bench"
)

func benchCmd(g *globals) *cobra.Command {
	var (
		cfg   bench.Config
		fsync []string
		quick bool
		keep  bool
		check bool
		prof  string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Logbook on this machine against raw JetStream on the same server",
		Long: `bench runs standard workloads on embedded JetStream servers of its own, in a
fresh directory (a temporary one, or one made inside --data), and prints one
row per workload beside the raw JetStream baseline for the same work,
measured on the same server in the same run, and their ratio:

  append    decisions through the log (validation, encoding, optimistic
            concurrency, Nats-Msg-Id, group commit) by 1, 8 and 64 writers,
            one and ten events per decision, per --fsync mode; baseline: the
            same messages published by the same writers, one plain publish
            or one atomic batch per decision, without those checks; for 64
            writers also atomic batches of 500 from one publisher, the
            server's durable ceiling, and of 64, the largest batches 64
            writers of one event each can fill
  read      projection catch-up into Pebble on disk, replay into memory
            (a plain fold, and Pebble in memory) and into Pebble on disk, of
            a log of --events session events; baseline: an ordered consumer
            reading the same messages without decoding them; each row and
            its baseline run nine times in turn, the ratio the median of
            the runs' ratios
  import    import claude of synthetic transcripts into a running serve,
            --sessions of --lines lines, and --small-files of 17 lines (what
            an import pays per file); baselines: the same messages published
            raw, each session's in atomic batches of up to 1000 by 4
            writers, in full batches of 1000 across sessions by one
            publisher (the server's ceiling), and the same with the
            headers the import stored (ids, expected sequences,
            signatures: the work the server does for the import's
            messages, shown beside the ceiling, held to nothing); broken
            down stage by stage (paths checked and transcripts found,
            connect and log opened, files imported, with each file's
            wait for a worker, session read, lines parsed and run
            appended, the import index saved, summary written and log
            closed), beside its lines parsed alone and serve's
            projection after it
  hook      logbook-hook claude (when found beside this binary or on
            $PATH; it exits once serve has the payload in its fsynced
            hook journal) and logbook hook claude (it exits once the
            payload is appended), started once per payload, against a
            running serve (fsync always); baselines: a Go program that
            does nothing (built with the go command) and logbook version,
            started as often
  command   logbook-exec (when found beside this binary or on $PATH;
            else logbook exec) of true in full_access through the
            serve's workers, request to exit, broken down stage by stage
            (serve accepted the exec socket's connection, request read,
            arguments parsed, journal settled, session resolved, request
            built, request decided, request appended, worker sees it,
            admission, command.started appended, session attached,
            sandbox prepared, forked, process started, first output, exit
            seen, tree reaped, exit, command.exited appended, exec sees
            the exit, exit status sent, client exits) with the CPU time
            per command of serve's process and of the child processes;
            baseline:
            fork/exec of true; and the same in workspace_write (when
            bubblewrap runs here), held to bubblewrap's own start and
            exit of true, measured in the same run, plus 10 ms (p50);
            with logbook-exec, logbook exec in full_access beside it
  signing   what signing the log costs, each signed path beside its
            unsigned twin in the same run, alternating, seven times each
            (the ratio the median of the runs'):
            - appends by 8 writers, one event per decision, fsync always
              (group commit merges their decisions, so a cost per message
              shows, which one writer waiting on each fsync would hide),
              signed by a registered serve key through a log that judges
              keys, as serve appends; baseline: the same decisions through
              a log of the same server that neither signs nor judges
            - logbook-hook claude against a serve that signs (every serve
              on its own server does); baseline: the same hooks against a
              serve in this process told not to sign (no key registered,
              no signing.began: its log is a log before signing, which its
              projector and checkpoints judge without verifying any
              signature); serve has no flag for that, so no other process
              can ask for it; the floor is on the p50 difference
            - replay fold into memory of a signed log of --events events
              with serve's judgment statement of all but its last 999
              (the most a log has past its last statement when serve
              checkpoints every 1000 messages; a tenth of a smaller log),
              verified on the statement's fast path: the statement's
              signature, the stored tree hashes proven against its root,
              each message checked against its leaf, signatures verified
              past it; baseline: the same fold through a log that verifies
              nothing
  scale     queries of a generated history answered by a running serve,
            this binary started once per query and timed to its exit:
            sessions (all, --limit 100, --phase working with 10 working) at
            each --scale-sessions size, session show and audit of one
            session of --scale-events events; baselines: logbook version,
            and for audit an ordered consumer reading the session's subject;
            audit is broken down stage by stage (process start, connect,
            fast path, id resolved, session read and verified, its
            commands and notifications found while it was read, timeline
            folded, written, exit); --only audit runs the audit row alone
  cluster   (--cluster, or --only cluster) three nats-server nodes in this
            process on loopback, sync_interval always, the stream at R3:
            appends by 8 writers on one node; baselines: the same messages
            published raw, and atomic batches of 500, on the same cluster;
            and a follower host's lag, from the start of an append on node 1
            to a projection that reads through node 2 holding it (p50/p99);
            baseline: publish on node 1 to an ordered consumer on node 2

ratio = Logbook's rate ÷ the baseline's rate; 1.00 means as fast as raw
JetStream. Absolute numbers move between runs on a shared machine; the
ratios are steadier. Where Logbook holds itself to a floor for a ratio,
the FLOOR column says whether this run meets it; for the scale rows it
holds the sessions p50 at 10,000 sessions to 300 ms, its growth between
sizes to at most the growth of the rows printed, and the --limit and
--phase p50s to 1.5 times (+5 ms) those at the first size; logbook-hook
to p50 ≤ 15 ms and p99 ≤ 40 ms; exec of true to p50 ≤ 10 ms and
p99 ≤ 25 ms; exec in workspace_write to bubblewrap's own p50 + 10 ms; the
import of --sessions transcripts to 0.70 of the server's ceiling; audit
to a ratio of at least 0.80; the replay fold into memory to 0.90 of
the ordered read; signed appends to 0.90 of unsigned, the hook's
p50 against a signing serve to at most 1 ms above the unsigned one (the
median of the runs' differences), the verified fold to 0.80 of the
unverified one. With --check, bench exits 1 when any
floor is missed, naming each.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.natsURL != "" {
				return usageErrorf("bench runs embedded servers of its own; --nats-url does not apply")
			}
			if err := cfg.Check(); err != nil {
				return &usageError{err}
			}
			cfg = cfg.OrDefaults(bench.Preset(quick))
			cfg.Quick = quick
			var err error
			if cfg.Fsync, err = bench.ParseFsync(fsync); err != nil {
				return &usageError{err}
			}
			if prof != "" {
				stop, err := startCPUProfile(prof)
				if err != nil {
					return err
				}
				defer stop()
			}
			return runBench(cmd.Context(), g, cfg, keep, check)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&quick, "quick", false, "smaller workloads: the whole run takes under a minute on 2 cores")
	f.StringSliceVar(&fsync, "fsync", []string{"always", "interval"}, "durability modes of the append rows: always, interval, or both (always,interval)")
	f.StringSliceVar(&cfg.Only, "only", nil, "run only these groups: append, read, import, hook, command, signing, scale (audit: its audit row alone), cluster")
	f.BoolVar(&cfg.Cluster, "cluster", false, "also run the cluster rows: appends and a follower's lag on a three-node R3 cluster")
	f.IntVar(&cfg.Appends, "appends", 0, "events per append row (default 10000, --quick 2000)")
	f.IntVar(&cfg.Events, "events", 0, "events in the log that read rows replay (default 200000, --quick 20000)")
	f.IntVar(&cfg.Sessions, "sessions", 0, "transcripts the import row imports (default 20, --quick 10)")
	f.IntVar(&cfg.Lines, "lines", 0, "lines per transcript (default 250, --quick 60)")
	f.IntVar(&cfg.SmallFiles, "small-files", 0, fmt.Sprintf("transcripts of %d lines the import row of many small files imports (default 555, --quick 200)", bench.SmallFileLines))
	f.IntVar(&cfg.Hooks, "hooks", 0, "hook payloads the hook row sends (default 200, --quick 100)")
	f.IntSliceVar(&cfg.ScaleSessions, "scale-sessions", nil, "history sizes of the scale rows, in sessions, ascending (default 1000,10000,50000, --quick 1000,10000)")
	f.IntVar(&cfg.ScaleEvents, "scale-events", 0, "events of the long session of the scale rows (default 100000, --quick 20000)")
	f.IntVar(&cfg.Queries, "queries", 0, "runs of each scale row (default 20, --quick 10)")
	for _, b := range []struct {
		name string
		max  int64
	}{
		{"appends", 1_000_000}, {"events", 10_000_000}, {"sessions", 10_000}, {"lines", 100_000}, {"small-files", 100_000},
		{"hooks", 100_000}, {"scale-sessions", 1_000_000}, {"scale-events", 10_000_000}, {"queries", 10_000},
	} {
		bound(f, b.name, 1, b.max)
	}
	f.BoolVar(&keep, "keep", false, "keep the working directory")
	f.StringVar(&prof, "cpuprofile", "", "write a CPU profile of the whole run (workloads, baselines and the servers they run on, all in this process) to this file, for go tool pprof")
	f.BoolVar(&check, "check", false, "exit 1, naming each, when the run misses a floor (a ratio LOW or a latency MISSED)")
	return cmd
}

// runBench runs the workloads cfg selects in a fresh working directory
// (inside --data when given) and prints the table, or JSON.
func runBench(ctx context.Context, g *globals, cfg bench.Config, keep, check bool) error {
	dir, err := bench.MakeDir(g.data)
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	rep, err := bench.Run(ctx, benchCLI(exe), cfg, dir, g.stderr)
	if err != nil {
		return err
	}
	if g.json {
		err = writeJSON(g.stdout, rep)
	} else {
		err = rep.WriteText(g.stdout, keep)
	}
	if err != nil || !check {
		return err
	}
	return checkFloors(rep)
}

// startCPUProfile starts a CPU profile written to path and returns what
// stops it; the file is complete once stop returns.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: --cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: --cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// checkFloors is --check: an error (exit 1) naming every floor rep
// missed; nil when it met them all.
func checkFloors(rep bench.Report) error {
	if missed := rep.Missed(); len(missed) > 0 {
		s := "s"
		if len(missed) == 1 {
			s = ""
		}
		return &exitError{code: 1, err: fmt.Errorf("bench: %d floor%s missed:\n  %s", len(missed), s, strings.Join(missed, "\n  "))}
	}
	return nil
}

// benchCLI wires the bench workloads to this command line: exe is the
// binary its process rows start.
func benchCLI(exe string) bench.CLI {
	return bench.CLI{
		Run: runCLI,
		RunUnsigned: func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
			return runCLI(context.WithValue(ctx, unsignedServe{}, true), args, stdin, stdout, stderr)
		},
		Dial: func(ctx context.Context, data string) (*nats.Conn, error) {
			g := &globals{data: data}
			url, opts, ok := dataDir(data).dir().ServerURL(g.reach())
			if !ok {
				return nil, errors.New("no server running")
			}
			nc, err := natslog.Connect(url, append(opts, nats.Timeout(time.Second))...)
			if err != nil {
				return nil, err
			}
			if err := api.Call(ctx, nc, api.AnyPrefix, api.VerbStatus, struct{}{}, &api.StatusReply{}); err != nil {
				nc.Close()
				return nil, err
			}
			return nc, nil
		},
		Checkpoint: func(ctx context.Context, nc *nats.Conn) (uint64, error) {
			var st api.StatusReply
			err := api.Call(ctx, nc, api.AnyPrefix, api.VerbStatus, struct{}{}, &st)
			return st.Checkpoint, err
		},
		SpoolDir: func(data string) string { return dataDir(data).path("spool") },
		Exe:      exe,
		HookExe:  bench.HookExe(exe),
		ExecExe:  bench.ExecExe(exe),
		Version:  version,
	}
}
