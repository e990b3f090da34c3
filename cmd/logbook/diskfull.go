package main

import (
	"context"
	"time"

	"github.com/logbook-dev/logbook/adapters/host"
)

// pausedSince is diskfull.Pause.Since's time for /metrics
// (logbook_appends_paused_since_seconds); zero outside serve.
func (b *backend) pausedSince() time.Time {
	if b.pause == nil {
		return time.Time{}
	}
	since, _, _ := b.pause.Since()
	return since
}

// diskPaused asks the server b talks to whether its appends are paused
// by a full disk (host.AskDisk): "" when not, with no server, or from a
// server that does not answer within 2 s or knows no disk verb.
func (b *backend) diskPaused(ctx context.Context) string {
	if b == nil || !b.remote || b.api == "" {
		return ""
	}
	return host.AskDisk(ctx, b.nc, b.api)
}
