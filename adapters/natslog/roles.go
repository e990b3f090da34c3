package natslog

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Role is what a NATS user of the embedded server may do with the log.
// Only RoleAdmin may create, update, delete or purge the LOGBOOK stream
// or remove a message from it; every other role is held to the subjects
// Permissions lists, and the server refuses anything else with a
// permissions violation.
type Role string

// The roles, narrowest first.
const (
	// RoleReader reads the stream: stream info, direct and stored-message
	// gets, and consumers of its own (ordered consumers), and calls the
	// API verbs that only read (Grants.ReadAPI and Grants.FollowerAPI).
	// It subscribes to nothing but its inbox and answers nothing: it
	// cannot take a request meant for a server, nor reply to one. It
	// publishes nothing on lb.> and calls no stream API that changes
	// anything.
	RoleReader Role = "reader"
	// RoleFollower is RoleReader plus answering the read verbs on its
	// own follower's subjects (Grants.FollowerAPI with the user's
	// FollowerID): what `serve --role reader` does on a host that
	// follows a log. It cannot subscribe to another follower's subjects,
	// nor to the API subjects of a server that appends (Grants.API).
	RoleFollower Role = "follower"
	// RoleWorker is RoleReader plus what a sandbox worker does: append
	// command and session events and command output, take requests off
	// the workers' durable consumer (and ack them), keep its KV buckets,
	// and answer on its core subjects (stdin).
	RoleWorker Role = "worker"
	// RoleWriter is RoleReader plus what hooks, importers and the CLI do:
	// append any event, call the request/reply API (Grants.API), read the
	// workers' heartbeats, and send stdin to a worker. It subscribes to
	// nothing but its inbox and answers no request: a request to serve
	// (the gate's, verify's) cannot be taken or answered with it.
	RoleWriter Role = "writer"
	// RoleServe is RoleWriter plus taking and answering the
	// request/reply API (Grants.API): what serve's own connection does.
	// The data dir does not hold it: the embedded server's serve user
	// has a password that only the serve process knows.
	RoleServe Role = "serve"
	// RoleAdmin may do anything, the stream's create, update and delete
	// included. No running process holds it by default.
	RoleAdmin Role = "admin"
)

// Roles lists every role, narrowest first.
var Roles = []Role{RoleReader, RoleFollower, RoleWorker, RoleWriter, RoleServe, RoleAdmin}

// ParseRole returns the Role named s, or an error naming the roles.
func ParseRole(s string) (Role, error) {
	if r := Role(s); slices.Contains(Roles, r) {
		return r, nil
	}
	return "", fmt.Errorf("role %q: want reader, follower, worker, writer, serve or admin", s)
}

// Grants names what lies outside the LOGBOOK stream that the roles use:
// the workers' durable consumer and KV buckets, and the core subjects of
// the request/reply API and of worker control. The log does not know
// them; the program that runs the workers does.
type Grants struct {
	// WorkerDurable is the durable consumer on LOGBOOK that workers take
	// requests from (e.g. "workers"). Only RoleWorker may create it,
	// pull from it and ack its messages; no one but admin may delete it.
	WorkerDurable string
	// WorkerBuckets are KV buckets workers create and write (heartbeats,
	// claims).
	WorkerBuckets []string
	// WriterReadBuckets are buckets of WorkerBuckets that RoleWriter
	// reads (the live workers).
	WriterReadBuckets []string
	// API is the request/reply API's subject filter (e.g.
	// "logbook.api.>"): RoleWriter calls it, RoleServe also takes and
	// answers it.
	API string
	// ReadAPI are the subjects of API's verbs that only read (e.g.
	// "logbook.api.*.sessions"): RoleReader and RoleFollower may call
	// them.
	ReadAPI []string
	// FollowerAPI are the subjects, outside API, on which followers
	// answer the read verbs, the follower's id as a "*" token (e.g.
	// "logbook.ro.*.sessions"): every role but RoleWorker may call them,
	// and a RoleFollower user answers those with its own FollowerID in
	// place of the "*" ("logbook.ro.0a1b2c3d4e5f.sessions"), no other
	// follower's.
	FollowerAPI []string
	// WorkerControl is the core subject filter workers answer on (e.g.
	// "logbook.worker.>"): RoleWorker subscribes, RoleWriter sends.
	WorkerControl string
	// Checkpoints is the stream of the log's signed checkpoints and their
	// witnesses' cosignatures (e.g. "LOGBOOK_CHECKPOINTS"): every role
	// reads it; only RoleServe may create it; no role but admin may
	// update, delete or purge it.
	Checkpoints string
	// CheckpointPublish is the subject of Checkpoints that only RoleServe
	// publishes on (the checkpoints it signs).
	CheckpointPublish string
	// CosignPublish is the subject filter of Checkpoints that
	// RoleFollower and RoleServe publish on (a witness's cosignatures).
	CosignPublish string
	// JudgmentPublish is the subject of Checkpoints that only RoleServe
	// publishes on (its judgment statements; "": none).
	JudgmentPublish string
}

// replyWindow is how long a writer or worker may answer a request it
// received (any number of messages to its reply subject, for answers
// sent in parts, with heartbeats while the API works on a request for up
// to 5 minutes); it may publish to no other reply subject. The server
// remembers the reply subject of every request delivered to such a
// connection for this long, about 200 bytes each, so the window bounds
// that memory: at 100 requests a second, ~7 MiB. (Its consumers'
// deliveries are not remembered: their ack subjects are its to publish,
// see ackSubjects.)
const replyWindow = 6 * time.Minute

// InboxPrefix returns the prefix of the reply subjects of a connection
// with role's credentials, "_INBOX.<role>" (e.g. "_INBOX.reader"):
// every answer to its requests, and every delivery of its pull
// consumers, arrives under it. Every role but RoleAdmin may subscribe
// under its own prefix and nowhere else, so a reader cannot listen to the
// answers serve gives a writer. It returns "" for RoleAdmin and for a
// role Roles does not list (the client library's default, "_INBOX").
func InboxPrefix(role Role) string {
	if role == RoleAdmin || !slices.Contains(Roles, role) {
		return ""
	}
	return "_INBOX." + string(role)
}

// InboxOption returns the connection option that makes a connection with
// role's credentials use InboxPrefix(role) (nats.CustomInboxPrefix);
// every connection with credentials of a role but admin needs it, or
// the server refuses its first request's subscription. For RoleAdmin and
// an unknown role it changes nothing.
func InboxOption(role Role) nats.Option {
	p := InboxPrefix(role)
	if p == "" {
		return func(*nats.Options) error { return nil }
	}
	return nats.CustomInboxPrefix(p)
}

// jsAPI returns the JetStream API subject for op (e.g. "STREAM.INFO")
// with the tokens after it.
func jsAPI(op string, tokens ...string) string {
	s := "$JS.API." + op
	for _, t := range tokens {
		s += "." + t
	}
	return s
}

// readStream returns the API subjects that read stream: its info, stored
// and direct gets, the list of its consumers' infos (what info on each
// by name tells; serve's metrics report their pending counts), and
// consumers of the caller's own (create, info, delete, pull).
func readStream(stream string) []string {
	return []string{
		jsAPI("STREAM.INFO", stream),
		jsAPI("CONSUMER.LIST", stream),
		jsAPI("STREAM.MSG.GET", stream),
		jsAPI("DIRECT.GET", stream),
		jsAPI("DIRECT.GET", stream, ">"),
		jsAPI("CONSUMER.CREATE", stream),
		jsAPI("CONSUMER.CREATE", stream, ">"),
		jsAPI("CONSUMER.INFO", stream, ">"),
		jsAPI("CONSUMER.DELETE", stream, ">"),
		jsAPI("CONSUMER.MSG.NEXT", stream, ">"),
	}
}

// ackSubjects returns the ack subjects of every consumer on stream. A
// role may publish there so that the server does not remember, as a reply
// subject the connection may answer, each message one of its own
// consumers delivers: those are kept for the reply window, and at the
// log's rate they were most of serve's heap. Acking a consumer of
// AckNone (every ordered consumer) does nothing; the workers' durable,
// the one consumer whose acks settle anything, is denied to every other
// role.
func ackSubjects(stream string) string { return "$JS.ACK." + stream + ".>" }

// kvStream is the stream that holds KV bucket b.
func kvStream(b string) string { return "KV_" + b }

// followerSubjects returns the subjects of FollowerAPI that the follower
// with API id id answers: each with its first "*" token replaced by id.
// It returns none for an empty id.
func followerSubjects(api []string, id string) []string {
	if id == "" {
		return nil
	}
	var subs []string
	for _, s := range api {
		toks := strings.Split(s, ".")
		if i := slices.Index(toks, "*"); i >= 0 {
			toks[i] = id
		}
		subs = append(subs, strings.Join(toks, "."))
	}
	return subs
}

// Permissions returns the subject permissions of user u (by its Role,
// and a follower's by its FollowerID too) on a server where g names the
// workers' and the API's subjects; nil (everything) for RoleAdmin. Every
// role but admin gets an allow list (anything else is refused), and an
// explicit deny of the stream's create, update, delete, purge, message
// delete, snapshot and restore, which holds even if an allow above is
// widened one day.
func Permissions(u User, g Grants) *server.Permissions {
	role := u.Role
	if role == RoleAdmin {
		return nil
	}
	pub := []string{jsAPI("INFO"), ackSubjects(StreamName)}
	pub = append(pub, readStream(StreamName)...)
	sub := []string{InboxPrefix(role) + ".>"}
	denyPub := []string{
		jsAPI("STREAM.CREATE", StreamName),
		jsAPI("STREAM.UPDATE", StreamName),
		jsAPI("STREAM.DELETE", StreamName),
		jsAPI("STREAM.PURGE", StreamName),
		jsAPI("STREAM.MSG.DELETE", StreamName),
		jsAPI("STREAM.SNAPSHOT", StreamName),
		jsAPI("STREAM.RESTORE", StreamName),
	}
	if g.WorkerDurable != "" && role != RoleWorker {
		// Consumers of one's own, not the workers' queue of requests.
		denyPub = append(denyPub,
			jsAPI("CONSUMER.CREATE", StreamName, g.WorkerDurable),
			jsAPI("CONSUMER.CREATE", StreamName, g.WorkerDurable, ">"),
			jsAPI("CONSUMER.DURABLE.CREATE", StreamName, g.WorkerDurable),
			jsAPI("CONSUMER.MSG.NEXT", StreamName, g.WorkerDurable),
		)
	}
	if g.WorkerDurable != "" {
		denyPub = append(denyPub, jsAPI("CONSUMER.DELETE", StreamName, g.WorkerDurable))
		if role != RoleWorker {
			// Acks settle the workers' queue of requests: theirs alone.
			denyPub = append(denyPub, "$JS.ACK."+StreamName+"."+g.WorkerDurable+".>")
		}
	}
	if g.Checkpoints != "" {
		pub = append(pub, readStream(g.Checkpoints)...)
		pub = append(pub, ackSubjects(g.Checkpoints))
		denyPub = append(denyPub,
			jsAPI("STREAM.UPDATE", g.Checkpoints),
			jsAPI("STREAM.DELETE", g.Checkpoints),
			jsAPI("STREAM.PURGE", g.Checkpoints),
			jsAPI("STREAM.MSG.DELETE", g.Checkpoints),
		)
		switch role {
		case RoleServe:
			pub = append(pub, jsAPI("STREAM.CREATE", g.Checkpoints), g.CheckpointPublish, g.CosignPublish)
			if g.JudgmentPublish != "" {
				pub = append(pub, g.JudgmentPublish)
			}
		case RoleFollower:
			pub = append(pub, g.CosignPublish)
		}
	}
	var resp *server.ResponsePermission
	switch role {
	case RoleReader, RoleFollower:
		pub = append(pub, g.ReadAPI...)
		pub = append(pub, g.FollowerAPI...)
		if own := followerSubjects(g.FollowerAPI, u.FollowerID); role == RoleFollower && len(own) > 0 {
			// Its own follower's subjects only: with another's id, or
			// "*", a follower's credentials would answer for every
			// follower.
			sub = append(sub, own...)
			resp = &server.ResponsePermission{MaxMsgs: -1, Expires: replyWindow}
		}
	case RoleWriter, RoleServe:
		pub = append(pub, StreamSubjects)
		for _, b := range g.WriterReadBuckets {
			pub = append(pub, jsAPI("STREAM.INFO", kvStream(b)), ackSubjects(kvStream(b)))
			pub = append(pub, readStream(kvStream(b))...)
		}
		if g.API != "" {
			pub = append(pub, g.API)
		}
		pub = append(pub, g.FollowerAPI...)
		if g.WorkerControl != "" {
			pub = append(pub, g.WorkerControl)
		}
		if role == RoleServe {
			if g.API != "" {
				sub = append(sub, g.API)
			}
			resp = &server.ResponsePermission{MaxMsgs: -1, Expires: replyWindow}
		}
	case RoleWorker:
		pub = append(pub, "lb.ev.command.>", "lb.ev.session.>", "lb.out.>")
		if g.WorkerDurable != "" {
			pub = append(pub, jsAPI("CONSUMER.DURABLE.CREATE", StreamName, g.WorkerDurable))
		}
		for _, b := range g.WorkerBuckets {
			s := kvStream(b)
			pub = append(pub, jsAPI("STREAM.CREATE", s), "$KV."+b+".>", ackSubjects(s))
			pub = append(pub, readStream(s)...)
		}
		if g.WorkerControl != "" {
			sub = append(sub, g.WorkerControl)
		}
		resp = &server.ResponsePermission{MaxMsgs: -1, Expires: replyWindow}
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub, Deny: denyPub},
		Subscribe: &server.SubjectPermission{Allow: sub},
		Response:  resp,
	}
}
