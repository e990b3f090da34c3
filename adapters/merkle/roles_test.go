package merkle

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/internal/natstest"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

var grants = natslog.Grants{Checkpoints: CheckpointStream, CheckpointPublish: CheckpointSubject, CosignPublish: CosignSubjects, JudgmentPublish: JudgmentSubject}

// Serve creates the checkpoint stream and publishes checkpoints; a
// follower publishes cosignatures; every role reads both. A reader, a
// writer and a worker publish neither, a follower no checkpoint: each
// attempt is the server's permissions violation.
func TestRolesOnCheckpoints(t *testing.T) {
	t.Parallel() // its own server; refused requests mostly wait
	pass := map[natslog.Role]string{}
	var users []natslog.User
	for _, r := range natslog.Roles {
		pass[r] = natslog.NewPassword()
		users = append(users, natslog.User{Name: string(r), Password: pass[r], Role: r})
	}
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Users: users, Grants: grants})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown() })
	connect := func(role natslog.Role) (*nats.Conn, jetstream.JetStream, *natstest.Violations) {
		r := &natstest.Violations{}
		nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(string(role), pass[role]), natslog.InboxOption(role), nats.ErrorHandler(r.Handler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return nc, js, r
	}
	ctx := t.Context()
	anc, _, _ := connect(natslog.RoleAdmin)
	l, err := natslog.Open(ctx, anc, natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendStarted(t, l, "s1", "/work")

	_, sjs, sref := connect(natslog.RoleServe)
	if _, err := EnsureStream(ctx, sjs); err != nil {
		t.Fatalf("serve creates %s: %v", CheckpointStream, err)
	}
	dir := t.TempDir()
	signer, _, err := LoadCheckpointKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := Checkpoint{Origin: "o", Size: 1}.Sign(signer)
	if err != nil {
		t.Fatal(err)
	}
	cpSeq, err := PublishCheckpoint(ctx, sjs, signed)
	if err != nil {
		t.Fatalf("serve publishes a checkpoint: %v", err)
	}
	statement, err := Judgment{Checkpoint: Checkpoint{Origin: "o", Size: 1}}.Sign(signer)
	if err != nil {
		t.Fatal(err)
	}
	if err := PublishJudgment(ctx, sjs, cpSeq, statement); err != nil {
		t.Fatalf("serve publishes a judgment: %v", err)
	}
	w, err := LoadWitnessKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, fjs, fref := connect(natslog.RoleFollower)
	if err := PublishCosignature(ctx, fjs, w, cpSeq, signed); err != nil {
		t.Fatalf("follower publishes a cosignature: %v", err)
	}
	for _, role := range []natslog.Role{natslog.RoleReader, natslog.RoleFollower, natslog.RoleWorker, natslog.RoleWriter, natslog.RoleServe} {
		_, js, _ := connect(role)
		all, err := ReadAll(ctx, js)
		if err != nil || len(all) != 3 {
			t.Fatalf("%s reads the checkpoints: %d, %v; want 3", role, len(all), err)
		}
	}
	for _, r := range []*natstest.Violations{sref, fref} {
		if errs := r.Errs(); len(errs) > 0 {
			t.Fatalf("refused: %v", errs)
		}
	}
	for _, c := range []struct {
		role    natslog.Role
		subject string
	}{
		{natslog.RoleReader, CheckpointSubject},
		{natslog.RoleReader, CosignSubject(w.KeyHash())},
		{natslog.RoleWriter, CheckpointSubject},
		{natslog.RoleWriter, CosignSubject(w.KeyHash())},
		{natslog.RoleWorker, CheckpointSubject},
		{natslog.RoleFollower, CheckpointSubject},
		{natslog.RoleWriter, JudgmentSubject},
		{natslog.RoleWorker, JudgmentSubject},
		{natslog.RoleFollower, JudgmentSubject},
		{natslog.RoleServe, "$JS.API.STREAM.DELETE." + CheckpointStream},
		{natslog.RoleServe, "$JS.API.STREAM.PURGE." + CheckpointStream},
		{natslog.RoleWriter, "$JS.API.STREAM.MSG.DELETE." + CheckpointStream},
	} {
		nc, _, ref := connect(c.role)
		ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, _ = nc.RequestWithContext(ctx, c.subject, signed)
		cancel()
		if ref.Wait(c.subject, 30*time.Second) == nil {
			t.Errorf("%s on %s: no permissions violation; got %v", c.role, c.subject, ref.Errs())
		}
	}
	_, ajs, _ := connect(natslog.RoleAdmin)
	all, err := ReadAll(ctx, ajs)
	if err != nil || len(all) != 3 {
		t.Fatalf("after the attempts: %d messages, %v; want 3", len(all), err)
	}
}
