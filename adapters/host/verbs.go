package host

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/projections"
)

// VerbDisk is serve's API verb that answers a DiskReply: what doctor
// shows of a full disk.
const VerbDisk = "disk"

// DiskReply is VerbDisk's answer: Paused is diskfull.Pause.String (""
// while appends go on).
type DiskReply struct {
	Paused string `json:"paused,omitempty"`
}

// AskDisk asks the server answering prefix on nc whether its appends
// are paused by a full disk: diskfull.Pause.String, or "" (not paused,
// a server that does not answer within 2 s or knows no VerbDisk).
func AskDisk(ctx context.Context, nc *nats.Conn, prefix string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r DiskReply
	if err := api.Call(ctx, nc, prefix, VerbDisk, struct{}{}, &r); err != nil {
		return ""
	}
	return r.Paused
}

// Verbs is serve's API table: the service's verbs, the gate's, the
// status verb and VerbDisk.
type Verbs struct {
	Service *api.Service
	// Gate are the gate's handlers (gate.Service.Handlers).
	Gate map[string]func(context.Context, []byte) (any, error)
	// Health is the log's health, which the status verb reports.
	Health *LogHealth
	Log    *natslog.Log
	Store  *projections.Store
	// Durability is copied into every status reply.
	Durability string
	// Paused says what a full disk paused (diskfull.Pause.String).
	Paused func() string
	// Reader is serve --role reader: a follower answers only ReadVerbs.
	Reader bool
}

// Handlers returns the table, a map of its own: verb name → handler
// taking the request's JSON and returning the reply to encode. The
// status verb is LogHealth.StatusReply on v.Log and v.Store, after the
// service's WaitIntakeToRead.
func (v Verbs) Handlers() map[string]func(context.Context, []byte) (any, error) {
	verbs := v.Service.Handlers()
	maps.Copy(verbs, v.Gate)
	verbs[api.VerbStatus] = func(ctx context.Context, _ []byte) (any, error) {
		reply, err := v.Health.StatusReply(ctx, v.Log, v.Store, v.Durability, v.Service.WaitIntakeToRead)
		if err != nil {
			return nil, err
		}
		return reply, nil
	}
	verbs[VerbDisk] = func(context.Context, []byte) (any, error) {
		return DiskReply{Paused: v.Paused()}, nil
	}
	if v.Reader {
		// A follower answers what a reader may ask, on its own prefix
		// only (its credentials may not answer the shared one).
		for name := range verbs {
			if !slices.Contains(ReadVerbs, name) {
				delete(verbs, name)
			}
		}
	}
	return verbs
}
