package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// SessionAudit returns the audit timeline of session id: its events,
// those of the commands requested for it (SessionCommands,
// replay.SessionTimeline) and the notifications sent about it
// (SessionNotifications), in stream order, with each event the log could not attest that
// belongs to them in its place (replay.WithUnattested): quarantined
// lists them once the timeline is read (the log judges events as it
// reads them). A session the log holds no event of, attested
// or not, is an error wrapping events.ErrNotFound; other errors are the
// log's. The session's events are read streamed (natslog.Log.LoadStreamed),
// a command's or notification's with Load. mark, when not nil, is called
// as each stage ends, with its name (AuditCommandsFound, AuditSessionRead,
// AuditFolded), on the caller's goroutine.
func SessionAudit(ctx context.Context, log *natslog.Log, id string, quarantined func() []replay.Unattested, mark func(stage string)) ([]replay.Item, error) {
	if mark == nil {
		mark = func(string) {}
	}
	ids, err := SessionCommands(ctx, log, id)
	if err != nil {
		return nil, err
	}
	mark(AuditCommandsFound)
	// A session whose every event the log quarantined reads as none: it
	// is shown, as what it is.
	items, terr := replay.SessionTimeline(ctx, streamedSessions{log, mark}, id, ids)
	notFound := errors.Is(terr, events.ErrNotFound)
	if terr != nil && !notFound {
		return nil, terr
	}
	told, err := SessionNotifications(ctx, log, id)
	if err != nil {
		return nil, err
	}
	for _, n := range told {
		recs, _, err := log.Load(ctx, events.Aggregate{Kind: events.KindNotification, ID: n})
		if err != nil {
			return nil, fmt.Errorf("audit %s: notification %s: %w", id, n, err)
		}
		items = append(items, replay.TimelineOf(recs)...)
	}
	slices.SortStableFunc(items, func(a, b replay.Item) int { return cmp.Compare(a.Seq, b.Seq) })
	subjects := map[string]bool{events.Aggregate{Kind: events.KindSession, ID: id}.Subject(): true}
	for _, c := range ids {
		subjects[events.Aggregate{Kind: events.KindCommand, ID: c}.Subject()] = true
	}
	var us []replay.Unattested
	for _, u := range quarantined() {
		if subjects[u.Subject] {
			us = append(us, u)
		}
	}
	if notFound && len(us) == 0 {
		return nil, terr
	}
	items = replay.WithUnattested(items, us)
	mark(AuditFolded)
	return items, nil
}

// The stages of SessionAudit, as its mark names them when each ends.
const (
	// AuditCommandsFound: the ids of the commands requested for the
	// session are known (SessionCommands).
	AuditCommandsFound = "commands"
	// AuditSessionRead: the session's events are read, decoded and
	// judged.
	AuditSessionRead = "read"
	// AuditFolded: the commands' and notifications' events are read too,
	// and the timeline is made of them all, in stream order.
	AuditFolded = "folded"
)

// streamedSessions is a Log whose Load reads a session aggregate
// streamed (natslog.Log.LoadStreamed: a session may hold many thousand
// events) and marks AuditSessionRead when it has; it loads every other
// aggregate with Load.
type streamedSessions struct {
	*natslog.Log
	mark func(stage string)
}

// Load implements events.Log.
func (s streamedSessions) Load(ctx context.Context, agg events.Aggregate) ([]events.Record, uint64, error) {
	if agg.Kind != events.KindSession {
		return s.Log.Load(ctx, agg)
	}
	recs, last, err := s.Log.LoadStreamed(ctx, agg)
	s.mark(AuditSessionRead)
	return recs, last, err
}

// NotificationFilter is the subjects of the notification aggregates.
const NotificationFilter = events.SubjectEvents + "." + events.KindNotification + ".*"

// SessionNotifications returns the ids (idempotency keys) of the
// notifications sent about session, in stream order, read from the log
// alone: each notification.sent's body is looked at for its session.
// Errors are the log's, naming the session.
func SessionNotifications(ctx context.Context, log *natslog.Log, session string) ([]string, error) {
	var ids []string
	for m, err := range log.ReadRaw(ctx, NotificationFilter, 1) {
		if err != nil {
			return nil, fmt.Errorf("notifications of session %s: %w", session, err)
		}
		if m.Header.Get(natslog.HeaderType) != (events.NotificationSent{}).EventType() {
			continue
		}
		var sent struct {
			Agg  events.Aggregate `json:"agg"`
			Data struct {
				Session string `json:"session"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Data, &sent) == nil && sent.Data.Session == session {
			ids = append(ids, sent.Agg.ID)
		}
	}
	return ids, nil
}
