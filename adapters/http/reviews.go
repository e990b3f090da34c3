package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/session"
	"github.com/oklog/ulid/v2"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Verdict is a person's verdict on an open review, as POST
// /v1/reviews/{id} takes it.
type Verdict struct {
	Session string `json:"session"` // the session aggregate id the review belongs to
	Verdict string `json:"verdict"` // "allow" or "deny"
	Reason  string `json:"reason"`  // why, as recorded on the log: 1..1000 bytes
	By      string `json:"by"`      // the person's name, [A-Za-z0-9._@-], 1..64 bytes; the actor is "person:<by>"
}

// Reviews records a person's verdict on an open review; *gate.Gate is
// one. Answer decides review id of session sess (verdict allow or deny,
// reason, actor, ref the id of the request) and returns the decided
// review; the first answer wins, a later one is refused wrapping
// events.ErrRejected, an unknown review wraps events.ErrNotFound or
// events.ErrRejected.
type Reviews interface {
	Answer(ctx context.Context, sess, id, verdict, reason, actor, ref string) (session.DecidedReview, uint64, error)
}

// reviewReply is POST /v1/reviews/{id}'s answer.
type reviewReply struct {
	Review session.DecidedReview `json:"review"`
	Actor  string                `json:"actor"`
	// Seq is the stream sequence of the verdict's event: GET
	// /v1/pending?min_seq=Seq (or any read with it) sees it decided.
	Seq uint64 `json:"seq"`
}

func (s *Server) review(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Reviews == nil {
		s.fail(w, r, fmt.Errorf("%w: this server records no review verdicts", errUnavailable))
		return
	}
	var v Verdict
	if err := decodeBody(r, &v, 8<<10); err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	switch {
	case v.Verdict != events.VerdictAllow && v.Verdict != events.VerdictDeny:
		s.fail(w, r, fmt.Errorf("%w: verdict %q: want allow or deny", errBadRequest, v.Verdict))
		return
	case v.Session == "":
		s.fail(w, r, fmt.Errorf("%w: session: want the session the review belongs to", errBadRequest))
		return
	case strings.TrimSpace(v.Reason) == "" || len(v.Reason) > 1000:
		s.fail(w, r, fmt.Errorf("%w: reason: want 1..1000 bytes saying why, not blank", errBadRequest))
		return
	case v.By == "" || !validName(v.By, 64):
		s.fail(w, r, fmt.Errorf("%w: by %q: want the person's name, 1..64 bytes of [A-Za-z0-9._@-]", errBadRequest, v.By))
		return
	case s.cfg.Redactor.Redact(v.By) != v.By:
		s.fail(w, r, fmt.Errorf("%w: by looks like a secret: it is the actor on the log for good, so send the person's name", errBadRequest))
		return
	}
	// The reason is kept on the log for good: redacted first, cut again
	// to its cap when redaction made it longer.
	v.Reason = redact.CutText(s.cfg.Redactor.Redact(v.Reason), 1000)
	sess, err := s.resolveSession(v.Session)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if id, err = s.resolveReview(sess, id); err != nil {
		s.fail(w, r, err)
		return
	}
	actor := "person:" + v.By
	dr, seq, err := s.cfg.Reviews.Answer(r.Context(), sess, id, v.Verdict, v.Reason, actor, ulid.Make().String())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reviewReply{Review: dr, Actor: actor, Seq: seq})
}

// resolveReview returns the id of session sess's review that id names:
// id itself when a review of the session (open or decided) has it, else
// the one open review whose id begins with it; a prefix several open
// reviews begin with is a bad request listing them; anything else is
// left to the gate to answer for.
func (s *Server) resolveReview(sess, id string) (string, error) {
	st, err := s.store.Session(sess)
	if err != nil {
		return "", err
	}
	if _, ok := st.PendingReview(id); ok {
		return id, nil
	}
	if _, ok := st.DecidedReview(id); ok {
		return id, nil
	}
	var begins []string
	for _, p := range st.Pending {
		if strings.HasPrefix(p.ID, id) {
			begins = append(begins, p.ID)
		}
	}
	switch len(begins) {
	case 0:
		return id, nil
	case 1:
		return begins[0], nil
	}
	return "", fmt.Errorf("%w: review id prefix %q is ambiguous: it begins the open reviews %s; give more of the id", errBadRequest, id, strings.Join(begins, ", "))
}

// validName reports a name of [A-Za-z0-9._@-], at most max bytes ("" is valid).
func validName(s string, max int) bool {
	if len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

// decodeBody decodes r's JSON body into v: at most max bytes (else an
// error wrapping errTooLarge), valid UTF-8 (as a hook payload must be),
// no unknown fields, no field given twice at any depth (names compared
// regardless of case, as they match), one value.
func decodeBody(r *http.Request, v any, max int64) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return fmt.Errorf("%w: read body: %v", errBadRequest, err)
	}
	if int64(len(body)) > max {
		return fmt.Errorf("%w: body over %d bytes (%d KiB), the most %s takes", errTooLarge, max, max>>10, r.URL.Path)
	}
	if !utf8.Valid(body) {
		i := 0
		for i < len(body) {
			c, n := utf8.DecodeRune(body[i:])
			if c == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return fmt.Errorf("%w: body: invalid UTF-8 at byte %d", errBadRequest, i)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: body: %s", errBadRequest, bodyError(err, v))
	}
	if dec.More() {
		return fmt.Errorf("%w: body: trailing data after the JSON value", errBadRequest)
	}
	// Fields match names regardless of case, and the last of two wins.
	if k, dup := jsonx.DuplicateKey(body, true); dup {
		return fmt.Errorf("%w: body: duplicate key %q: a field may be given once (names compare regardless of case)", errBadRequest, k)
	}
	return nil
}

// bodyError says what is wrong with a JSON request body decoded into v
// (a pointer to a struct), in the body's terms rather than Go types.
func bodyError(err error, v any) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Type == instantType:
		got := te.Value
		if !strings.HasPrefix(got, `"`) {
			got = jsonKind(got)
		}
		return fmt.Sprintf("field %q: want an RFC 3339 time such as \"2026-01-02T15:04:05Z\" or \"2026-01-02T15:04:05.5+01:00\", got %s", te.Field, got)
	case errors.As(err, &te) && te.Type == zeroInstantType:
		return fmt.Sprintf("field %q: %s is the zero time, which dates nothing: give when it happened, or leave the field out", te.Field, te.Value)
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("must be a JSON object with the fields %s, got %s", jsonFields(v), jsonKind(te.Value))
	case errors.As(err, &te):
		return fmt.Sprintf("field %q: want %s, got %s", te.Field, goKind(te.Type), jsonKind(te.Value))
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.EOF):
		return fmt.Sprintf("empty: want a JSON object with the fields %s", jsonFields(v))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "not valid JSON: it ends early"
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(msg, "unknown field ") {
		return fmt.Sprintf("%s (want only %s)", msg, jsonFields(v))
	}
	return msg
}

// jsonFields lists the JSON names of the struct v points to, quoted and
// comma-separated.
func jsonFields(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "documented for this endpoint"
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, strconv.Quote(name))
	}
	return strings.Join(names, ", ")
}

// jsonKind turns a json.UnmarshalTypeError value ("array", "number 3", …)
// into words.
func jsonKind(v string) string {
	k, _, _ := strings.Cut(v, " ")
	switch k {
	case "array", "object":
		return "an " + k
	case "string", "number":
		return "a " + k
	case "bool":
		return "a boolean"
	case "":
		return "something else"
	}
	if k[0] == 'a' || k[0] == 'o' {
		return "an " + k
	}
	return "a " + k
}

// goKind names the JSON shape a Go type decodes from.
func goKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}
