package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

// SessionCommands returns the ids of the commands requested for session,
// in stream order, read from the log alone: every command event's type
// header is looked at, and only requests are decoded. Errors are the
// log's, naming the session.
func SessionCommands(ctx context.Context, log *natslog.Log, session string) ([]string, error) {
	var ids []string
	for m, err := range log.ReadRaw(ctx, CommandFilter, 1) {
		if err != nil {
			return nil, fmt.Errorf("commands of session %s: %w", session, err)
		}
		if m.Header.Get(natslog.HeaderType) != (events.CommandRequested{}).EventType() {
			continue
		}
		var req struct {
			Agg  events.Aggregate `json:"agg"`
			Data struct {
				Session string `json:"session"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Data, &req) == nil && req.Data.Session == session {
			ids = append(ids, req.Agg.ID)
		}
	}
	return ids, nil
}

// InheritedEnv are the variables a person's command request passes on
// from the requesting process's environment unless told not to
// (`exec --no-env`); everything else must be named.
var InheritedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ"}

// InheritEnv returns the variables of InheritedEnv this process has, as
// KEY=VALUE, in InheritedEnv's order.
func InheritEnv() []string {
	var env []string
	for _, k := range InheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
