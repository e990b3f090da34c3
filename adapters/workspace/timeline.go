package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// Timeline returns the audit timeline of workspace id
// (replay.WorkspaceTimeline): its events, those of the tasks delegated to
// it, those of the commands run in its folder or below and those of its
// check runs, in stream order, all found by reading log alone: every
// task.delegated, command.requested and check.started message is read,
// undecoded but for its aggregate and workspace. A workspace with no events is an error wrapping
// events.ErrNotFound; other errors are log's.
func Timeline(ctx context.Context, log *natslog.Log, id string) ([]replay.Item, error) {
	recs, _, err := log.Load(ctx, events.Aggregate{Kind: events.KindWorkspace, ID: id})
	if err != nil || len(recs) == 0 {
		return nil, fmt.Errorf("workspace %s: %w", id, events.ErrNotFound)
	}
	path := ""
	if d, ok := recs[0].Data.(events.WorkspaceReserved); ok {
		path = d.Path
	}
	var tasks, commands, checks []string
	for _, f := range []struct{ filter, typ string }{
		{events.SubjectEvents + "." + events.KindTask + ".*", (events.TaskDelegated{}).EventType()},
		{events.SubjectEvents + "." + events.KindCommand + ".>", (events.CommandRequested{}).EventType()},
		{events.SubjectEvents + "." + events.KindCheck + ".*", (events.CheckStarted{}).EventType()},
	} {
		for m, err := range log.ReadRaw(ctx, f.filter, 1) {
			if err != nil {
				return nil, err
			}
			if m.Header.Get(natslog.HeaderType) != f.typ {
				continue
			}
			var d struct {
				Agg  events.Aggregate `json:"agg"`
				Data struct {
					Workspace string `json:"workspace"`
				} `json:"data"`
			}
			if json.Unmarshal(m.Data, &d) != nil {
				continue
			}
			switch {
			case d.Agg.Kind == events.KindTask && d.Data.Workspace == id:
				tasks = append(tasks, d.Agg.ID)
			case d.Agg.Kind == events.KindCheck && d.Data.Workspace == id:
				checks = append(checks, d.Agg.ID)
			case d.Agg.Kind == events.KindCommand && path != "" && (d.Data.Workspace == path || strings.HasPrefix(d.Data.Workspace, path+"/")):
				commands = append(commands, d.Agg.ID)
			}
		}
	}
	return replay.WorkspaceTimeline(ctx, log, id, tasks, commands, checks)
}
