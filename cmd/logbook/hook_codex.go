package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/codex"
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
			var payload []byte
			if len(args) == 1 {
				if strings.TrimSpace(args[0]) == "" {
					// Said as what it is: an argument given empty, not a
					// payload missing from stdin, which was not read.
					what := "empty"
					if args[0] != "" {
						what = fmt.Sprintf("%d bytes of white space", len(args[0]))
					}
					return usageErrorf("hook codex: the payload argument is %s: Codex CLI passes its notify payload, one JSON object, as the last argument (without one it is read from stdin); nothing recorded or kept", what)
				}
				payload = []byte(args[0])
			} else {
				var err error
				if payload, err = io.ReadAll(io.LimitReader(g.stdin, maxHookPayload+1)); err != nil {
					return fmt.Errorf("hook codex: read stdin: %w", err)
				}
			}
			// A notify payload is spooled as Codex CLI sent it: CheckNotify
			// only checks it.
			return recordHook(cmd.Context(), g, "hook codex", payload, func(b []byte) ([]byte, error) { return b, codex.CheckNotify(b) })
		},
	}
}
