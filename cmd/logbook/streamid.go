package main

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/host"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// checkLog makes sure the log still holds every event the data dir's
// projection was made from (host.CheckLog), before a command that opens
// the data dir directly reads or appends anything; a projection it
// opened is kept in b.views for the command's own openViews.
func (b *backend) checkLog(ctx context.Context, g *globals) error {
	s, err := host.CheckLog(ctx, b.viewsOf(g))
	b.views = s
	return err
}

// streamLost is natslog.Log.StreamLost on l.
func streamLost(l *natslog.Log, was natslog.Identity, err error) error { return l.StreamLost(was, err) }
