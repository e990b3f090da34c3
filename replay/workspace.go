package replay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/logbook-dev/logbook/events"
)

// WorkspaceTimeline returns the audit timeline of workspace id, read
// with Log.Load: one Item per event of the workspace (reserved, each
// materialization step, setup commands included, renames, the archive,
// the cleanup), of each task delegated to it that tasks names, of each
// command commands names (those run in it) and of each check run checks
// names (entry check-<run id>: the tree it judged, its verdict, and each
// push it allowed with its commits, Action "push allowed by check run
// <id>": the hook's permission, not a record that the push reached the
// remote), in stream order. Detail holds the
// payload's fields as key=value pairs. The error wraps events.ErrNotFound
// for a workspace with no events.
func WorkspaceTimeline(ctx context.Context, log events.Log, id string, tasks, commands, checks []string) ([]Item, error) {
	agg := events.Aggregate{Kind: events.KindWorkspace, ID: id}
	recs, err := loadTimeline(ctx, log, agg)
	if err != nil {
		return nil, err
	}
	items := payloadItems(recs, "")
	for _, c := range commands {
		crecs, _, err := log.Load(ctx, events.Aggregate{Kind: events.KindCommand, ID: c})
		if err != nil {
			return nil, fmt.Errorf("timeline %s: command %s: %w", agg, c, err)
		}
		items = append(items, CommandTimelineOf(crecs)...)
	}
	for _, t := range tasks {
		trecs, _, err := log.Load(ctx, events.Aggregate{Kind: events.KindTask, ID: t})
		if err != nil {
			return nil, fmt.Errorf("timeline %s: task %s: %w", agg, t, err)
		}
		items = append(items, payloadItems(trecs, "task-"+t)...)
	}
	for _, c := range checks {
		crecs, _, err := log.Load(ctx, events.Aggregate{Kind: events.KindCheck, ID: c})
		if err != nil {
			return nil, fmt.Errorf("timeline %s: check run %s: %w", agg, c, err)
		}
		items = append(items, payloadItems(crecs, "check-"+c)...)
	}
	slices.SortStableFunc(items, func(a, b Item) int { return cmp.Compare(a.Seq, b.Seq) })
	return items, nil
}

// payloadItems returns one Item per record, its Detail the payload's
// JSON fields as key=value pairs in key order.
func payloadItems(recs []events.Record, entry string) []Item {
	items := make([]Item, 0, len(recs))
	for _, r := range recs {
		it := Item{Seq: r.Seq, Ver: r.Ver, At: r.At.UTC(), Type: r.Type, Cause: r.Cause, Entry: entry}
		it.signedBy(r.Signer)
		var m map[string]any
		b, err := json.Marshal(r.Data)
		if err == nil {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber() // 100000000 stays 100000000, never 1e+08
			err = d.Decode(&m)
		}
		if err == nil {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var kv kvs
			for _, k := range keys {
				switch v := m[k].(type) {
				case string:
					kv.add(k, v)
				case []any:
					parts := make([]string, len(v))
					for i, x := range v {
						parts[i] = fmt.Sprint(x)
						if r, ok := x.(map[string]any); ok && r["local_sha"] != nil {
							// A pushed ref (check.push_allowed): local ref,
							// commit, remote ref.
							parts[i] = fmt.Sprintf("%v@%v->%v", r["local_ref"], r["local_sha"], r["remote_ref"])
							if tag, ok := r["tag"].(string); ok && tag != "" {
								// An annotated tag: the commit it points
								// to, and the tag object git named.
								parts[i] = fmt.Sprintf("%v@%v(tag:%s)->%v", r["local_ref"], r["local_sha"], tag, r["remote_ref"])
							}
						}
					}
					kv.add(k, strings.Join(parts, ","))
				default:
					kv.add(k, fmt.Sprint(v))
				}
			}
			it.Detail = kv.String()
		}
		if r.Type == "check.push_allowed" {
			// What is known is the check's permission, not that the push
			// reached the remote: git may still have failed it (another
			// pre-push hook, a rejected update).
			it.Action = "push allowed by check run " + r.Agg.ID
			it.Detail = strings.TrimSpace(it.Action + " (not a record that it was pushed): " + it.Detail)
		}
		items = append(items, it)
	}
	return items
}
