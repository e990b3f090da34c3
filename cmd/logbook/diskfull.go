package main

import (
	"context"

	"github.com/logbook-dev/logbook/adapters/host"
)

// diskPaused asks the server b talks to whether its appends are paused
// by a full disk (host.AskDisk): "" when not, with no server, or from a
// server that does not answer within 2 s or knows no disk verb.
func (b *backend) diskPaused(ctx context.Context) string {
	if b == nil || !b.remote || b.api == "" {
		return ""
	}
	return host.AskDisk(ctx, b.nc, b.api)
}
