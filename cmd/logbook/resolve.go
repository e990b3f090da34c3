package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/term"
	"github.com/logbook-dev/logbook/events"
)

// resolveID returns the id of the aggregate of kind (events.KindSession,
// events.KindCommand) that id names: id itself when an aggregate has it,
// else the one aggregate whose id begins with it, as git takes a unique
// prefix of a hash. The ids are the subjects of the log's stream (what
// the stream holds per subject, not the events), so this works the same
// through a server and on the data dir. An id given whole is found with
// one read of its aggregate's last event (natslog.Log.AggregateExists),
// so that naming a session costs the same among ten thousand as among
// ten; only a prefix lists the ids of its kind. A prefix no id begins
// with is an error wrapping events.ErrNotFound; a prefix several ids
// begin with is a usage error listing them.
func resolveID(ctx context.Context, b *backend, kind, id string) (string, error) {
	if id == "" {
		return "", usageErrorf("want a %s id (or a prefix of one)", kind)
	}
	if b.down != nil || b.socket != "" {
		// The stream cannot list its subjects without a leader: the
		// server answers for the id as given, from its projection.
		return id, nil
	}
	if !b.staleOK || !b.remote {
		// A lookup that fails (an id that is no subject token, a read
		// that does not answer) is left to the listing, which says why.
		if ok, err := b.log.AggregateExists(ctx, events.Aggregate{Kind: kind, ID: id}); err == nil && ok {
			return id, nil
		}
	}
	ids, err := lookupIDs(ctx, b, kind, id)
	if errors.Is(err, errLogDown) {
		// The server answers for the id as given, from its projection.
		return id, nil
	}
	if err != nil {
		return "", fmt.Errorf("look up %s %q: %w", kind, id, err)
	}
	if slices.Contains(ids, id) {
		return id, nil
	}
	switch len(ids) {
	case 0:
		return "", &notFoundError{fmt.Sprintf("%s %q not found: no %s id is or begins with it (%s lists them)", kind, id, kind, listCommand(kind))}
	case 1:
		return ids[0], nil
	}
	return "", usageErrorf("%s", term.AmbiguousID(kind, id, ids))
}

// errLogDown is lookupIDs' error when the server says its log does not
// answer.
var errLogDown = errors.New("log unavailable")

// lookupIDs is natslog.Log.AggregateIDs for resolveID. A read that may answer from
// the projection (backend.staleOK) through a server does not wait out a
// lost quorum here: it fails with errLogDown once the server says its log
// does not answer (backend.untilDown). Any other waits as long as the
// stream takes.
func lookupIDs(ctx context.Context, b *backend, kind, prefix string) ([]string, error) {
	if !b.staleOK || !b.remote {
		return b.log.AggregateIDs(ctx, kind, prefix)
	}
	var ids []string
	down, err := api.UntilDown(ctx, b.logDown, func(ctx context.Context) error {
		var err error
		ids, err = b.log.AggregateIDs(ctx, kind, prefix)
		return err
	})
	if down {
		return nil, errLogDown
	}
	return ids, err
}

// notFoundError is an id no aggregate has: it wraps events.ErrNotFound
// and says so in words of its own.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return events.ErrNotFound }

// listCommand is the command that lists the ids of kind.
func listCommand(kind string) string {
	if kind == events.KindSession {
		return "logbook sessions --all"
	}
	return "logbook " + kind + "s"
}
