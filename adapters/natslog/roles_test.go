package natslog

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/logbook-dev/logbook/adapters/internal/natstest"
	"github.com/logbook-dev/logbook/events"
)

var testGrants = Grants{
	WorkerDurable:     "workers",
	WorkerBuckets:     []string{"logbook-workers", "logbook-claims"},
	WriterReadBuckets: []string{"logbook-workers"},
	API:               "logbook.api.>",
	ReadAPI:           []string{"logbook.api.*.verify", "logbook.api.*.sessions"},
	FollowerAPI:       []string{"logbook.ro.*.verify", "logbook.ro.*.sessions"},
	WorkerControl:     "logbook.worker.>",
}

// The followers' ids on rolesServer: the user named "follower" answers
// for followerA, "follower-b" for followerB; "follower-none" has no id.
const (
	followerA = "0a1b2c3d4e5f"
	followerB = "b0b0b0b0b0b0"
)

// rolesServer starts an embedded server with one user per role (and two
// more followers), creates the stream as admin and appends one event,
// and returns the server.
func rolesServer(t *testing.T) *Server {
	t.Helper()
	var users []User
	for _, r := range []Role{RoleWriter, RoleReader, RoleFollower, RoleWorker, RoleServe, RoleAdmin} {
		u := User{Name: string(r), Password: NewPassword(), Role: r}
		if r == RoleFollower {
			u.FollowerID = followerA
		}
		users = append(users, u)
	}
	users = append(users,
		User{Name: "follower-b", Password: NewPassword(), Role: RoleFollower, FollowerID: followerB},
		User{Name: "follower-none", Password: NewPassword(), Role: RoleFollower})
	s, err := StartEmbedded(t.Context(), EmbeddedConfig{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Users: users, Grants: testGrants})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	admin, err := s.ConnectAs(RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	l, err := Open(t.Context(), admin, Config{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, decision(events.NewRegistry(), session("s1"), 0, 1, 2))
	l.Close()
	return s
}

// violations collects the permission violations the server reports to
// a connection made by connectRole.
type violations struct{ natstest.Violations }

// wait returns the server's permission violation naming subject, or
// fails the test after 5 s.
func (v *violations) wait(t *testing.T, subject string) error {
	t.Helper()
	err := v.Wait(subject, 5*time.Second)
	if err == nil {
		t.Fatalf("no permissions violation from the server for %s; got %v", subject, v.Errs())
	}
	return err
}

func connectRole(t *testing.T, s *Server, role Role) (*nats.Conn, *violations) {
	t.Helper()
	return connectUser(t, s, string(role))
}

// connectUser is connectRole as the user named name.
func connectUser(t *testing.T, s *Server, name string) (*nats.Conn, *violations) {
	t.Helper()
	var u User
	for _, u = range s.cfg.Users {
		if u.Name == name {
			break
		}
	}
	if u.Name != name {
		t.Fatalf("no user %q", name)
	}
	v := &violations{}
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(u.Name, u.Password), InboxOption(u.Role), nats.ErrorHandler(v.Handler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, v
}

// Readers, workers and writers cannot delete, purge or update the stream,
// remove a message, or (readers) publish on lb.>: each attempt fails, and
// the failure is the server's permissions violation for that subject.
func TestRoles_RefusedByServer(t *testing.T) {
	t.Parallel()
	s := rolesServer(t)
	stream := StreamName
	cfg := Config{}.StreamConfig()
	cfg.Description = "changed"
	attempts := []attempt{
		{"delete", "$JS.API.STREAM.DELETE." + stream, func(ctx context.Context, js jetstream.JetStream) error { return js.DeleteStream(ctx, stream) }},
		{"purge", "$JS.API.STREAM.PURGE." + stream, func(ctx context.Context, js jetstream.JetStream) error {
			st, err := js.Stream(ctx, stream)
			if err != nil {
				return err
			}
			return st.Purge(ctx)
		}},
		{"update", "$JS.API.STREAM.UPDATE." + stream, func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.UpdateStream(ctx, cfg)
			return err
		}},
		{"delete message", "$JS.API.STREAM.MSG.DELETE." + stream, func(ctx context.Context, js jetstream.JetStream) error {
			st, err := js.Stream(ctx, stream)
			if err != nil {
				return err
			}
			return st.DeleteMsg(ctx, 1)
		}},
		{"delete workers' consumer", "$JS.API.CONSUMER.DELETE." + stream + ".workers", func(ctx context.Context, js jetstream.JetStream) error {
			return js.DeleteConsumer(ctx, stream, "workers")
		}},
	}
	publish := attempt{"publish an event", "lb.ev.session.forged", func(ctx context.Context, js jetstream.JetStream) error {
		_, err := js.Publish(ctx, "lb.ev.session.forged", []byte("{}"))
		return err
	}}
	t.Run("attempts", func(t *testing.T) { tryAll(t, s, attempts, publish) })
	// The stream is intact: every message is still there.
	admin, _ := s.ConnectAs(RoleAdmin)
	defer admin.Close()
	js, _ := jetstream.New(admin)
	st, err := js.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	if info := st.CachedInfo(); info.State.Msgs != 2 || info.Config.Description == "changed" {
		t.Fatalf("stream after the attempts: %d messages, description %q", info.State.Msgs, info.Config.Description)
	}
	// Admin may: the refusals above were not the stream's own settings.
	if err := js.DeleteStream(t.Context(), stream); err != nil {
		t.Fatalf("delete as admin: %v", err)
	}
}

// Each role can do its work through the Log: a reader reads (Read,
// Follow, Load, LastEventSeq), a writer appends any event, a worker
// appends command events and output, each on a stream that exists.
func TestRoles_DoTheirWork(t *testing.T) {
	t.Parallel()
	s := rolesServer(t)
	reg := events.NewRegistry()
	for _, role := range []Role{RoleReader, RoleFollower, RoleWorker, RoleWriter, RoleServe} {
		t.Run(string(role), func(t *testing.T) {
			nc, v := connectRole(t, s, role)
			l, err := Open(t.Context(), nc, Config{Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := readAll(t, l, 0); len(got) < 2 {
				t.Fatalf("Read: %d records", len(got))
			}
			if _, _, err := l.Load(t.Context(), session("s1")); err != nil {
				t.Fatalf("Load: %v", err)
			}
			if _, err := l.LastEventSeq(t.Context()); err != nil {
				t.Fatalf("LastEventSeq: %v", err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			for _, err := range l.Follow(ctx, 1) {
				if err != nil {
					t.Fatalf("Follow: %v", err)
				}
			}
			cancel()
			switch role {
			case RoleWriter, RoleServe:
				mustAppend(t, l, decision(reg, session("w-"+string(role)), 0, 1, 1))
			case RoleWorker:
				if _, err := l.PublishOutput(t.Context(), "c1", "m1", []byte("out")); err != nil {
					t.Fatalf("PublishOutput: %v", err)
				}
			}
			if errs := v.Errs(); len(errs) > 0 {
				t.Fatalf("server refused: %v", errs)
			}
		})
	}
}

type attempt struct {
	name, subject string
	do            func(ctx context.Context, js jetstream.JetStream) error
}

// tryAll makes every attempt as every role but admin (and publish as a
// reader), in parallel, each on a connection of its own.
func tryAll(t *testing.T, s *Server, attempts []attempt, publish attempt) {
	for _, role := range []Role{RoleReader, RoleFollower, RoleWorker, RoleWriter, RoleServe} {
		as := attempts
		if role == RoleReader || role == RoleFollower {
			as = append(as, publish)
		}
		for _, a := range as {
			t.Run(string(role)+"/"+a.name, func(t *testing.T) {
				t.Parallel()
				nc, v := connectRole(t, s, role)
				js, _ := jetstream.New(nc)
				ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
				defer cancel()
				if err := a.do(ctx, js); err == nil {
					t.Fatalf("%s as %s succeeded", a.name, role)
				}
				t.Log(v.wait(t, a.subject))
			})
		}
	}
}

// Every role may ack its own consumers' deliveries (so the server need
// not remember them as replies), but only a worker may ack the workers'
// queue of requests: a reader's or writer's ack there is refused.
func TestRoles_AckOnlyOwnConsumers(t *testing.T) {
	t.Parallel()
	s := rolesServer(t)
	ack := "$JS.ACK." + StreamName + "." + testGrants.WorkerDurable + ".1.1.1.1.1.0"
	for _, role := range []Role{RoleReader, RoleFollower, RoleWriter, RoleServe} {
		t.Run(string(role), func(t *testing.T) {
			nc, v := connectRole(t, s, role)
			if err := nc.Publish(ack, []byte("+ACK")); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			t.Log(v.wait(t, ack))
		})
	}
	for _, role := range []Role{RoleReader, RoleFollower, RoleWriter, RoleServe, RoleWorker} {
		u := User{Role: role}
		if role == RoleFollower {
			u.FollowerID = followerA
		}
		p := Permissions(u, testGrants)
		if !slices.Contains(p.Publish.Allow, ackSubjects(StreamName)) {
			t.Errorf("%s may not ack its own consumers' deliveries: allow %v", role, p.Publish.Allow)
		}
	}
}

// Only serve takes requests on the API's subjects: with every other
// role, a subscription to a server's verify or gate subject (its own
// prefix, the shared one, or a wildcard over them) is the server's
// permissions violation, and so is a follower's on another's
// subjects outside the followers' own.
func TestRoles_OnlyServeTakesAPIRequests(t *testing.T) {
	s := rolesServer(t)
	subjects := []string{"logbook.api.0a1b2c3d4e5f.verify", "logbook.api.any.verify", "logbook.api.any.gate", "logbook.api.*.verify", "logbook.api.>", ">"}
	for _, role := range []Role{RoleReader, RoleFollower, RoleWorker, RoleWriter} {
		for _, subject := range subjects {
			t.Run(string(role)+"/"+subject, func(t *testing.T) {
				t.Parallel()
				nc, v := connectRole(t, s, role)
				if _, err := nc.SubscribeSync(subject); err != nil {
					t.Fatal(err)
				}
				if err := nc.Flush(); err != nil {
					t.Fatal(err)
				}
				t.Log(v.wait(t, subject))
			})
		}
	}
	t.Run("reader/followers' subjects", func(t *testing.T) {
		subscribeRefused(t, s, RoleReader, "logbook.ro.0a1b2c3d4e5f.verify")
	})
}

// subscribeRefused subscribes on subject as role on s and logs the
// permissions violation the server answers with; none within the wait
// fails the test.
func subscribeRefused(t *testing.T, s *Server, role Role, subject string) {
	t.Helper()
	nc, v := connectRole(t, s, role)
	if _, err := nc.SubscribeSync(subject); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	t.Log(v.wait(t, subject))
}

// ask sends an empty request on subject over nc and returns the answer;
// no answer within 2 s fails the test, naming what.
func ask(t *testing.T, nc *nats.Conn, subject, what string) string {
	t.Helper()
	m, err := nc.Request(subject, []byte("{}"), 2*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return string(m.Data)
}

// A forged answer: serve answers verify on its prefix with the true
// hash; with every other role an attacker subscribes to the same subject
// and answers with a spoofed one. The server refuses the subscription,
// and the owner's five calls all get the true hash. A follower answers
// on the followers' subjects, where a writer's call reaches it.
func TestRoles_SpoofedAnswerRefused(t *testing.T) {
	t.Parallel()
	s := rolesServer(t)
	const subject = "logbook.api.0a1b2c3d4e5f.verify"
	srv, _ := connectRole(t, s, RoleServe)
	if _, err := srv.Subscribe(subject, func(m *nats.Msg) { m.Respond([]byte("true-hash")) }); err != nil {
		t.Fatal(err)
	}
	srv.Flush()
	for _, role := range []Role{RoleReader, RoleFollower, RoleWorker, RoleWriter} {
		nc, v := connectRole(t, s, role)
		for _, sub := range []string{subject, "logbook.api.*.verify"} {
			if _, err := nc.Subscribe(sub, func(m *nats.Msg) { m.Respond([]byte("spoofed-by-" + string(role))) }); err != nil {
				t.Fatal(err)
			}
			nc.Flush()
			t.Logf("%s: %v", role, v.wait(t, sub))
		}
	}
	owner, v := connectRole(t, s, RoleWriter)
	for i := range 5 {
		if got := ask(t, owner, subject, fmt.Sprintf("call %d", i)); got != "true-hash" {
			t.Fatalf("call %d answered %q", i, got)
		}
	}
	if errs := v.Errs(); len(errs) > 0 {
		t.Errorf("the owner's calls were refused: %v", errs)
	}
	// A follower answers its own kind of subject, and a writer or a
	// reader reaches it there.
	f, fv := connectRole(t, s, RoleFollower)
	if _, err := f.Subscribe("logbook.ro."+followerA+".verify", func(m *nats.Msg) { m.Respond([]byte("follower")) }); err != nil {
		t.Fatal(err)
	}
	f.Flush()
	for _, role := range []Role{RoleReader, RoleWriter} {
		nc, _ := connectRole(t, s, role)
		if got := ask(t, nc, "logbook.ro."+followerA+".verify", fmt.Sprintf("%s calling a follower", role)); got != "follower" {
			t.Fatalf("%s calling a follower: answered %q", role, got)
		}
	}
	if errs := fv.Errs(); len(errs) > 0 {
		t.Errorf("the follower was refused: %v", errs)
	}
}

// A follower answers for itself only: with one follower's credentials,
// a subscription to another follower's verb subjects, or to every
// follower's, is the server's permissions violation, as is any
// follower subject with credentials that name no follower id; a reader
// asking the other follower gets that follower's answers alone.
func TestRoles_FollowerAnswersForItselfOnly(t *testing.T) {
	t.Parallel()
	s := rolesServer(t)
	b, bv := connectUser(t, s, "follower-b")
	for _, v := range []string{"verify", "sessions"} {
		if _, err := b.Subscribe("logbook.ro."+followerB+"."+v, func(m *nats.Msg) { m.Respond([]byte("follower-b")) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ user, subject string }{
		{"follower", "logbook.ro." + followerB + ".verify"},
		{"follower", "logbook.ro." + followerB + ".sessions"},
		{"follower", "logbook.ro.*.verify"},
		{"follower", "logbook.ro.>"},
		{"follower", "logbook.ro." + followerB + ".>"},
		{"follower-none", "logbook.ro." + followerA + ".verify"},
		{"follower-none", "logbook.ro." + followerB + ".verify"},
	} {
		t.Run(tc.user+"/"+tc.subject, func(t *testing.T) {
			nc, v := connectUser(t, s, tc.user)
			if _, err := nc.Subscribe(tc.subject, func(m *nats.Msg) { m.Respond([]byte("spoofed-by-" + tc.user)) }); err != nil {
				t.Fatal(err)
			}
			nc.Flush()
			t.Log(v.wait(t, tc.subject))
		})
	}
	reader, _ := connectRole(t, s, RoleReader)
	for i := range 5 {
		for _, v := range []string{"verify", "sessions"} {
			subject := "logbook.ro." + followerB + "." + v
			if got := ask(t, reader, subject, fmt.Sprintf("call %d of %s", i, subject)); got != "follower-b" {
				t.Fatalf("call %d of %s answered %q", i, subject, got)
			}
		}
	}
	if errs := bv.Errs(); len(errs) > 0 {
		t.Errorf("follower-b was refused its own subjects: %v", errs)
	}
}

// Each role but admin subscribes under its own inbox only: a
// subscription to every inbox, or to another role's, is the server's
// permissions violation, so a reader cannot listen to the answers serve
// gives a writer.
func TestRoles_OwnInboxOnly(t *testing.T) {
	s := rolesServer(t)
	for _, role := range []Role{RoleReader, RoleFollower, RoleWorker, RoleWriter, RoleServe} {
		others := []string{"_INBOX.>", "_INBOX.*.>", ">"}
		for _, r := range Roles {
			if r != role && r != RoleAdmin {
				others = append(others, InboxPrefix(r)+".>")
			}
		}
		for _, subject := range others {
			t.Run(string(role)+"/"+subject, func(t *testing.T) {
				t.Parallel()
				subscribeRefused(t, s, role, subject)
			})
		}
	}
	if p := InboxPrefix(RoleAdmin); p != "" {
		t.Errorf("admin's inbox prefix %q, want the default", p)
	}
}
