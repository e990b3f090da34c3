package main

import (
	"context"
	"time"

	"github.com/logbook-dev/logbook/adapters/api"
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

// verbDisk is serve's API verb that answers a diskReply: what doctor
// shows of a full disk.
const verbDisk = "disk"

// diskReply is verbDisk's answer: Paused is diskfull.Pause.String ("" while
// appends go on).
type diskReply struct {
	Paused string `json:"paused,omitempty"`
}

// diskPaused asks the server b talks to whether its appends are paused
// by a full disk: diskfull.Pause.String, or "" (not paused, no server, a
// server that does not answer within 2 s or knows no disk verb).
func (b *backend) diskPaused(ctx context.Context) string {
	if b == nil || !b.remote || b.api == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r diskReply
	if err := api.Call(ctx, b.nc, b.api, verbDisk, struct{}{}, &r); err != nil {
		return ""
	}
	return r.Paused
}
