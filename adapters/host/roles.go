package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
		JudgmentPublish:   merkle.JudgmentSubject,
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
	if err := dir.FollowerError(); err != nil {
		return nil, err
	}
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

// WriteClusterUsers writes, in the directory out (created 0700), a user
// per role with a new password, and followers (at least 1) follower
// users, each answering for a follower id of its own: users.conf, a
// nats-server authorization block with the permissions of Grants, and
// <role>.json, each role's credentials file (0600) with url as its URL,
// the followers' follower.json, follower-2.json, … follower-N.json. A
// users.conf already in out is refused: new passwords would lock out
// every host that has the old ones. Errors of the directory and the
// files name --out, the flag out comes from, and a followers below 1
// names --followers; AuthorizationConf's are returned as they are.
func WriteClusterUsers(out, url string, followers int) error {
	if out == "" {
		return errors.New("--out: want a directory")
	}
	if followers < 1 {
		return fmt.Errorf("--followers %d: want at least 1", followers)
	}
	if _, err := os.Stat(filepath.Join(out, "users.conf")); err == nil {
		return fmt.Errorf("--out %s: users.conf is there already; new passwords would lock out every host that has the old ones", out)
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	var users []natslog.User
	for _, r := range natslog.Roles {
		users = append(users, natslog.User{Name: string(r), Password: natslog.NewPassword(), Role: r})
		if r != natslog.RoleFollower {
			continue
		}
		// Each follower answers for its own id only: one follower's
		// credentials cannot answer a request made to another.
		users[len(users)-1].FollowerID = natslog.NewFollowerID()
		for i := 2; i <= followers; i++ {
			users = append(users, natslog.User{Name: fmt.Sprintf("follower-%d", i), Password: natslog.NewPassword(), Role: r, FollowerID: natslog.NewFollowerID()})
		}
	}
	conf, err := natslog.AuthorizationConf(users, Grants())
	if err != nil {
		return err
	}
	for _, u := range users {
		path := filepath.Join(out, u.Name+".json")
		c := datadir.Creds{User: u.Name, Password: u.Password, Role: string(u.Role), URL: url, FollowerID: u.FollowerID}
		if err := datadir.WriteCreds(path, c); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	header := "# Logbook's users, one per role (logbook creds cluster). Include it in every node's config.\n"
	if err := datadir.WriteFileAtomic(filepath.Join(out, "users.conf"), []byte(header+conf), 0o600); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}
