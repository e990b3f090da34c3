package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// maxHookPayload caps what `logbook hook claude` reads from stdin, in
// bytes. Larger payloads are refused (the observation's own cap keeps
// far less of it anyway).
const maxHookPayload = 32 << 20

// hookTimeout bounds how long a hook waits for the server before it
// leaves the payload in the spool.
const hookTimeout = 2 * time.Second

func hookCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "hook", Short: "Receive agent hooks"}
	claudeHook := &cobra.Command{
		Use:   "claude",
		Short: "Record one Claude Code hook payload read from stdin",
		Long: `hook claude reads one Claude Code hook payload on stdin, keeps it in the
data dir's spool (durably, before answering), and delivers the spool, in
order, to the running server. When no server runs, the payload waits in the
spool and the server delivers it when it starts. It never blocks the agent:
it exits 0 whether or not the server took the payload, and 1 (a
non-blocking error for Claude Code) only for a payload it cannot use,
which it keeps aside, redacted, in the spool's rejected/ folder with the
reason. A payload over 256 KiB has each of its strings cut to 4 KiB
(its original size and SHA-256 are recorded); an id or name over 256
bytes, a path over 4096, or a session_id or agent_id with a byte outside
[A-Za-z0-9_-] (it names the log's session aggregate), is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return hookClaude(cmd.Context(), g)
		},
	}
	cmd.AddCommand(claudeHook)
	return cmd
}

func hookClaude(ctx context.Context, g *globals) error {
	payload, err := io.ReadAll(io.LimitReader(g.stdin, maxHookPayload+1))
	if err != nil {
		return fmt.Errorf("hook claude: read stdin: %w", err)
	}
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return err
	}
	sp, err := claude.Open(dd.path("spool"))
	if err != nil {
		return err
	}
	var prepared []byte
	if len(payload) > maxHookPayload {
		err = fmt.Errorf("payload over %d MiB refused", maxHookPayload>>20)
	} else {
		prepared, err = claude.PrepareHook(payload)
	}
	if err != nil {
		// Bad input: exit 1, and keep it (redacted) where a person can
		// look, out of the spool so it blocks nothing.
		p, perr := dd.parser()
		if perr != nil {
			return fmt.Errorf("hook claude: %w (not kept: %v)", err, perr)
		}
		id, kerr := sp.KeepAside(payload, err, p.Redactor())
		if kerr != nil {
			return fmt.Errorf("hook claude: %w (not kept: %v)", err, kerr)
		}
		return fmt.Errorf("hook claude: %w (kept aside as %s)", err, filepath.Join(sp.Dir(), claude.RejectedDir, id+".json"))
	}
	// The agent process this hook runs under, for the reconciler to
	// watch; a hook that finds none (run by hand, /proc unreadable) is
	// recorded without one.
	host, _ := os.Hostname()
	agent, _ := claude.AgentProcess(os.Getpid(), host, claude.BootID())
	if _, err := sp.PutFrom(prepared, agent); err != nil {
		return fmt.Errorf("hook claude: spool: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	if err := deliverSpool(ctx, g, dd, sp); err != nil {
		// The payload is safe in the spool; the server delivers it later.
		fmt.Fprintf(g.stderr, "logbook hook: kept in spool: %v\n", err)
	}
	return nil
}

// deliverSpool sends every spooled payload, oldest first, to the running
// server, removing each one the server has made durable. It stops at the
// first failure, so order holds. Another process already delivering is
// not an error.
func deliverSpool(ctx context.Context, g *globals, dd dataDir, sp *claude.Spool) error {
	url, opts, ok := g.serverURL(dd)
	if !ok {
		return fmt.Errorf("no server running (no %s)", dd.path("serve.json"))
	}
	nc, err := natslog.Connect(url, append(opts, nats.Timeout(500*time.Millisecond), nats.MaxReconnects(0), nats.NoReconnect())...)
	if err != nil {
		return err
	}
	defer nc.Close()
	lock, err := sp.TryLock()
	if err != nil {
		return nil // someone else delivers
	}
	defer lock.Unlock()
	pending, err := sp.Pending()
	if err != nil {
		return err
	}
	prefix := api.AnyPrefix
	if si, ok := dd.readServeInfo(); ok && si.API != "" {
		prefix = si.API
	}
	for _, e := range pending {
		var r api.HookReply
		err := api.Call(ctx, nc, prefix, api.VerbHook, api.HookRequest{ID: e.ID, Text: string(e.Payload), Process: e.Process}, &r)
		if err != nil && api.IsInputError(err) {
			p, perr := dd.parser()
			if perr != nil {
				return perr
			}
			if err := sp.Reject(e.ID, e.Payload, err, p.Redactor()); err != nil {
				return err
			}
			fmt.Fprintf(g.stderr, "logbook hook: spooled payload %s refused: %v\n", e.ID, err)
			continue
		}
		if err != nil {
			return err
		}
		if err := sp.Remove(e.ID); err != nil {
			return err
		}
	}
	return nil
}
