package worker

import (
	"context"
	"errors"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// SessionAudit returns the audit timeline of session id: its events and
// those of the commands requested for it (SessionCommands,
// replay.SessionTimeline), with each event the log could not attest that
// belongs to them in its place (replay.WithUnattested): quarantined
// lists them once the timeline is read (the log judges events as it
// reads them). A session the log holds no event of, attested
// or not, is an error wrapping events.ErrNotFound; other errors are the
// log's.
func SessionAudit(ctx context.Context, log *natslog.Log, id string, quarantined func() []replay.Unattested) ([]replay.Item, error) {
	ids, err := SessionCommands(ctx, log, id)
	if err != nil {
		return nil, err
	}
	// A session whose every event the log quarantined reads as none: it
	// is shown, as what it is.
	items, err := replay.SessionTimeline(ctx, log, id, ids)
	notFound := errors.Is(err, events.ErrNotFound)
	if err != nil && !notFound {
		return nil, err
	}
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
		return nil, err
	}
	return replay.WithUnattested(items, us), nil
}
