package host

import (
	"context"
	"fmt"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/merkle"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/worker"
)

// ReadVerbs are the API verbs that only read: what natslog.RoleReader
// may call, and what serve --role reader answers (on its follower
// prefix). Callers must not modify it.
var ReadVerbs = []string{api.VerbSessions, api.VerbSession, api.VerbVerify, api.VerbStatus, api.VerbCommands, api.VerbCommand, api.VerbWorkspaces, api.VerbWorkspaceAt}

// Grants names the subjects of the workers, the API and the checkpoints
// for the roles' permissions, on the embedded server and in the
// users.conf of a cluster of one's own.
func Grants() natslog.Grants {
	var readAPI, followerAPI []string
	for _, v := range ReadVerbs {
		readAPI = append(readAPI, "logbook.api.*."+v)
		followerAPI = append(followerAPI, api.FollowerRoot+"*."+v)
	}
	return natslog.Grants{
		WorkerDurable:     worker.DurableName,
		WorkerBuckets:     []string{worker.HeartbeatBucket, worker.ClaimBucket},
		WriterReadBuckets: []string{worker.HeartbeatBucket},
		API:               "logbook.api.>",
		WorkerControl:     "logbook.worker.>",
		ReadAPI:           readAPI,
		FollowerAPI:       followerAPI,
		Checkpoints:       merkle.CheckpointStream,
		CheckpointPublish: merkle.CheckpointSubject,
		CosignPublish:     merkle.CosignSubjects,
	}
}

// StartRoles starts the data dir dir's embedded server (its store in
// dir/jetstream, listening on listen, a loopback host:port) with a user
// per role (datadir.Dir.EmbeddedUsers, admin's from admin) and, as admin,
// creates the stream or checks its settings (natslog.Open with cfg);
// then it drops the admin connection. The server's own connection is
// serve's; the caller shuts the server down. healed is told of each
// restart of JetStream that clears a store write error
// (natslog.EmbeddedConfig). A start error is "start log in DIR: …".
func StartRoles(ctx context.Context, dir datadir.Dir, mode natslog.Fsync, listen string, admin datadir.Creds, cfg natslog.Config, healed func(writeError string, err error)) (*natslog.Server, error) {
	users, err := dir.EmbeddedUsers(admin)
	if err != nil {
		return nil, err
	}
	srv, err := natslog.StartEmbedded(ctx, natslog.EmbeddedConfig{
		StoreDir: dir.Path("jetstream"), Fsync: mode, Listen: listen, Users: users, Grants: Grants(),
		Healed: healed,
	})
	if err != nil {
		return nil, fmt.Errorf("start log in %s: %w", dir, err)
	}
	anc, err := srv.ConnectAs(natslog.RoleAdmin)
	if err == nil {
		var l *natslog.Log
		if l, err = natslog.Open(ctx, anc, cfg); err == nil {
			l.Close()
		}
		anc.Close()
	}
	if err != nil {
		srv.Shutdown()
		return nil, err
	}
	return srv, nil
}

// SayHealed returns a StartRoles healed function that tells, through
// say, of each restart of JetStream to clear a store write error, and of
// a restart that failed (serve must then be restarted).
func SayHealed(say func(format string, args ...any)) func(writeError string, err error) {
	return func(werr string, err error) {
		if err != nil {
			say("the log's store refused a write (%s) and could not be restarted: %v; restart serve", werr, err)
			return
		}
		say("the log's store takes writes again: JetStream restarted to clear its write error (%s)", werr)
	}
}
