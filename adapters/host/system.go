package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/adapters/api"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/replay"
)

// SystemVerbs are the verbs of serve's API the system socket answers
// for anyone it lets in, when serve answers them; gate.VerbReviewDecide
// it answers only for the people who may decide.
var SystemVerbs = []string{gate.VerbGate, api.VerbSessions, api.VerbSession, gate.VerbReviews, api.VerbStatus}

// System is serve's system socket (api.System): the host's users, named
// by their peer credentials, reach hooks, the gate and the verbs a person
// needs through it.
type System struct {
	Dir      string     // the socket's directory (--socket-dir); made 0755 when missing
	Access   api.Access // who is let in besides serve's user and root
	Deciders api.Access // of those, who may also answer the gate's reviews
	// Group is the gid, in decimal, the socket file is given, mode 0660,
	// so only its members (and root) may connect (--socket-group); "":
	// none, the socket is 0666 and Access alone decides.
	Group string
	// Hook takes a hook payload (api.Intake.Accept).
	Hook func(context.Context, []byte) (any, error)
	// Own are verbs of the socket's own (the audit verb), answered for
	// anyone let in.
	Own map[string]func(context.Context, []byte) (any, error)
	// Verbs are serve's API handlers; those named in SystemVerbs, and
	// gate.VerbReviewDecide, are answered when present.
	Verbs map[string]func(context.Context, []byte) (any, error)
	// Logf receives what is said (format, args), from Serve's goroutine
	// too.
	Logf func(format string, args ...any)
}

// Serve listens on s's socket and answers it on a goroutine of its own
// until the returned stop is called; stop returns once every connection
// is over and the socket is closed. A socket directory it may not use
// is an error (api.ListenSystem's).
func (s System) Serve(ctx context.Context) (stop func(), err error) {
	host, _ := os.Hostname()
	sys := &api.System{
		Verbs:    map[string]func(context.Context, []byte) (any, error){api.VerbHook: s.Hook},
		People:   map[string]func(context.Context, []byte) (any, error){},
		Access:   s.Access,
		Deciders: s.Deciders,
		Host:     host,
	}
	for v, h := range s.Own {
		sys.Verbs[v] = h
	}
	for _, v := range SystemVerbs {
		if h, ok := s.Verbs[v]; ok {
			sys.Verbs[v] = h
		}
	}
	if h, ok := s.Verbs[gate.VerbReviewDecide]; ok {
		sys.People[gate.VerbReviewDecide] = h
	}
	gid := -1
	if s.Group != "" {
		if gid, err = strconv.Atoi(s.Group); err != nil || gid < 0 {
			return nil, fmt.Errorf("socket group %q: want a gid", s.Group)
		}
	}
	sock, err := api.ListenSystem(s.Dir, gid)
	if err != nil {
		return nil, err
	}
	if gid >= 0 {
		s.Logf("system socket %s (group %d, 0660): lets in %s; reviews answered by %s", sock.Path, gid, s.Access, s.Deciders)
	} else {
		s.Logf("system socket %s: lets in %s; reviews answered by %s", sock.Path, s.Access, s.Deciders)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sys.Serve(ctx, sock.UnixListener, s.Logf)
	}()
	return func() { cancel(); <-done; sock.Close() }, nil
}

// VerbAudit is the system socket's audit verb: AuditRequest →
// AuditReply, answered by Audit.
const VerbAudit = "audit"

// AuditRequest asks for the audit timeline of a session (or workspace)
// ID: as JSON items, or as the text audit prints.
type AuditRequest struct {
	ID   string `json:"id"`
	JSON bool   `json:"json,omitempty"`
}

// AuditReply is an audit timeline: Items (JSON) or Text.
type AuditReply struct {
	Items json.RawMessage `json:"items,omitempty"`
	Text  string          `json:"text,omitempty"`
}

// Audit returns the handler of VerbAudit: it decodes an AuditRequest and
// answers with the timeline items returns for its ID, as JSON or as
// replay.WriteText's text. A request that does not decode, or names no
// ID, is an error wrapping events.ErrMalformed; items' errors are
// returned as they are.
func Audit(items func(ctx context.Context, id string) ([]replay.Item, error)) Handler {
	return func(ctx context.Context, data []byte) (any, error) {
		var req AuditRequest
		if err := json.Unmarshal(data, &req); err != nil {
			return nil, fmt.Errorf("audit request: %w: %v", events.ErrMalformed, err)
		}
		if req.ID == "" {
			return nil, fmt.Errorf("audit request: %w: no id", events.ErrMalformed)
		}
		its, err := items(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		if req.JSON {
			raw, err := json.Marshal(its)
			return AuditReply{Items: raw}, err
		}
		var text strings.Builder
		if err := replay.WriteText(&text, its); err != nil {
			return nil, err
		}
		return AuditReply{Text: text.String()}, nil
	}
}
