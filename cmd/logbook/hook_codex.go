package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/codex"
	"github.com/logbook-dev/logbook/adapters/redact"
)

func hookCodexCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "codex [PAYLOAD]",
		Short: "Record one Codex CLI notify payload (its last argument, or stdin)",
		Long: `hook codex is a program for Codex CLI's notify setting
(notify = ["logbook", "hook", "codex"] in ~/.codex/config.toml): Codex
passes a JSON payload as the last argument ({"type": "agent-turn-complete",
"thread-id", "turn-id", "cwd", …}); without an argument the payload is read
from stdin. Like hook claude, it keeps the payload in the data dir's spool
(durably, before answering) and delivers the spool, in order, to the
running server, or leaves it there for the server to deliver when it
starts. It never blocks the agent: it exits 0 whether or not the server
took the payload, and 1 only for a payload it cannot use (not JSON, or
without a string "type" or "thread-id"), which it keeps aside, redacted, in
the spool's rejected/ folder with the reason; nothing is appended for it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return hookCodex(cmd.Context(), g, args)
		},
	}
}

func hookCodex(ctx context.Context, g *globals, args []string) error {
	var payload []byte
	if len(args) == 1 {
		payload = []byte(args[0])
	} else {
		var err error
		payload, err = io.ReadAll(io.LimitReader(g.stdin, maxHookPayload+1))
		if err != nil {
			return fmt.Errorf("hook codex: read stdin: %w", err)
		}
	}
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return err
	}
	sp, err := claude.Open(dd.path("spool"))
	if err != nil {
		return err
	}
	if len(payload) > maxHookPayload {
		err = fmt.Errorf("payload over %d MiB refused", maxHookPayload>>20)
	} else {
		err = codex.CheckNotify(payload)
	}
	if err != nil {
		p, perr := dd.parser()
		if perr != nil {
			return fmt.Errorf("hook codex: %w (not kept: %v)", redactErr(redact.Default(), err), perr)
		}
		id, kerr := sp.KeepAside(payload, err, p.Redactor())
		err = redactErr(p.Redactor(), err) // it may quote the payload
		if kerr != nil {
			return fmt.Errorf("hook codex: %w (not kept: %v)", err, kerr)
		}
		return fmt.Errorf("hook codex: %w (kept aside as %s)", err, filepath.Join(sp.Dir(), claude.RejectedDir, id+".json"))
	}
	host, _ := os.Hostname()
	agent, _ := claude.AgentProcess(os.Getpid(), host, claude.BootID())
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	id := ulid.Make().String()
	// As hook claude: straight to the server when nothing waits in the
	// spool, else behind what waits.
	waiting, err := sp.HasPending()
	if err == nil && !waiting {
		err = deliverHook(ctx, g, dd, api.HookRequest{ID: id, Text: string(payload), Process: agent})
		if err == nil {
			return nil
		}
		if api.IsInputError(err) {
			p, perr := dd.parser()
			if perr != nil {
				return fmt.Errorf("hook codex: %w (not kept: %v)", redactErr(redact.Default(), err), perr)
			}
			kerr := sp.Reject(id, payload, err, p.Redactor())
			err = redactErr(p.Redactor(), err)
			if kerr != nil {
				return fmt.Errorf("hook codex: %w (not kept: %v)", err, kerr)
			}
			return fmt.Errorf("hook codex: %w (kept aside as %s)", err, filepath.Join(sp.Dir(), claude.RejectedDir, id+".json"))
		}
	}
	if perr := sp.PutAs(id, payload, agent); perr != nil {
		return fmt.Errorf("hook codex: spool: %w", perr)
	}
	if err != nil {
		fmt.Fprintf(g.stderr, "logbook hook: kept in spool: %v\n", redactErr(hookRedactor(g), err))
	}
	return nil
}
