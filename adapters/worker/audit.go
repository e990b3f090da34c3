package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

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
// a command's or notification's with Load. The session's commands and
// the notifications about it are looked for, each on a goroutine of its
// own that has returned when SessionAudit does, while the session's
// events are read: each is a scan of the log of its own, and mostly
// waits for the server. mark, when not nil, is called as each stage
// ends, with its name (AuditSessionRead, AuditCommandsFound,
// AuditFolded), on the caller's goroutine.
func SessionAudit(ctx context.Context, log *natslog.Log, id string, quarantined func() []replay.Unattested, mark func(stage string)) ([]replay.Item, error) {
	if mark == nil {
		mark = func(string) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lk := StartAuditLookups(ctx, cancel, log, id)
	defer lk.Wait()
	agg := events.Aggregate{Kind: events.KindSession, ID: id}
	read := readSession{Log: log, agg: agg}
	read.recs, read.last, read.err = log.LoadStreamed(ctx, agg)
	mark(AuditSessionRead)
	if read.err != nil {
		cancel() // the read's error is the answer (SessionTimeline's)
	}
	lk.Wait()
	ids, told := lk.Commands, lk.Told
	mark(AuditCommandsFound)
	// A scan's own error is the cause, not the read it cut short.
	switch {
	case read.err != nil:
	case lk.CommandsErr != nil:
		return nil, lk.CommandsErr
	case lk.ToldErr != nil:
		return nil, lk.ToldErr
	}
	// A session whose every event the log quarantined reads as none: it
	// is shown, as what it is.
	items, terr := replay.SessionTimeline(ctx, read, id, ids)
	notFound := errors.Is(terr, events.ErrNotFound)
	if terr != nil && !notFound {
		return nil, terr
	}
	items = append(items, told...)
	replay.SortBySeq(items)
	us := SessionUnattested(quarantined(), id, ids)
	if notFound && len(us) == 0 {
		return nil, terr
	}
	items = replay.WithUnattested(items, us)
	mark(AuditFolded)
	return items, nil
}

// AuditLookups are the look-ups SessionAudit makes beside its read of a
// session, each on a goroutine of its own: the ids of the commands
// requested for it (SessionCommands) and the timeline of the
// notifications sent about it (NotificationItems). Their fields are set
// once Wait has returned.
type AuditLookups struct {
	wg          sync.WaitGroup
	Commands    []string
	CommandsErr error // SessionCommands'
	Told        []replay.Item
	ToldErr     error // NotificationItems'
}

// StartAuditLookups starts the look-ups of session on log under ctx; a
// look-up that fails calls cancel (ctx's), which ends the caller's read
// too. Call Wait before reading the fields, and before returning.
func StartAuditLookups(ctx context.Context, cancel context.CancelFunc, log *natslog.Log, session string) *AuditLookups {
	lk := &AuditLookups{}
	lk.wg.Go(func() {
		if lk.Commands, lk.CommandsErr = SessionCommands(ctx, log, session); lk.CommandsErr != nil {
			cancel()
		}
	})
	lk.wg.Go(func() {
		if lk.Told, lk.ToldErr = NotificationItems(ctx, log, session); lk.ToldErr != nil {
			cancel()
		}
	})
	return lk
}

// Wait returns once both look-ups have ended. Safe to call more than once.
func (lk *AuditLookups) Wait() { lk.wg.Wait() }

// NotificationItems returns the timeline of every notification sent
// about session (SessionNotifications), each read with Load, in stream
// order. Errors are the log's, naming the session and the notification.
func NotificationItems(ctx context.Context, log *natslog.Log, session string) ([]replay.Item, error) {
	told, err := SessionNotifications(ctx, log, session)
	if err != nil {
		return nil, err
	}
	var items []replay.Item
	for _, n := range told {
		recs, _, err := log.Load(ctx, events.Aggregate{Kind: events.KindNotification, ID: n})
		if err != nil {
			return nil, fmt.Errorf("audit %s: notification %s: %w", session, n, err)
		}
		items = append(items, replay.TimelineOf(recs)...)
	}
	return items, nil
}

// SessionUnattested returns those of quarantined that belong to the
// audit of session: stored on its subject or on the subject of one of
// commands, the commands requested for it; in quarantined's order.
func SessionUnattested(quarantined []replay.Unattested, session string, commands []string) []replay.Unattested {
	subjects := map[string]bool{events.Aggregate{Kind: events.KindSession, ID: session}.Subject(): true}
	for _, c := range commands {
		subjects[events.Aggregate{Kind: events.KindCommand, ID: c}.Subject()] = true
	}
	var us []replay.Unattested
	for _, u := range quarantined {
		if subjects[u.Subject] {
			us = append(us, u)
		}
	}
	return us
}

// The stages of SessionAudit, as its mark names them when each ends.
const (
	// AuditSessionRead: the session's events are read, decoded and
	// judged.
	AuditSessionRead = "read"
	// AuditCommandsFound: the ids of the commands requested for the
	// session are known (SessionCommands), and the notifications sent
	// about it read, both looked for while the session was read.
	AuditCommandsFound = "commands"
	// AuditFolded: the commands' events are read too, and the timeline
	// is made of them all, in stream order.
	AuditFolded = "folded"
)

// readSession is a Log whose Load returns, for agg, what was read of it
// already (recs, last and err, from natslog.Log.LoadStreamed), and loads
// every other aggregate with Load.
type readSession struct {
	*natslog.Log
	agg  events.Aggregate
	recs []events.Record
	last uint64
	err  error
}

// Load implements events.Log.
func (s readSession) Load(ctx context.Context, agg events.Aggregate) ([]events.Record, uint64, error) {
	if agg != s.agg {
		return s.Log.Load(ctx, agg)
	}
	return s.recs, s.last, s.err
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
