package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Verdict is a person's verdict on an open review, as POST
// /v1/reviews/{id} takes it.
type Verdict struct {
	Review  string `json:"-"`                // the review id, from the path
	Session string `json:"session"`          // the session aggregate id the review belongs to
	Verdict string `json:"verdict"`          // "allow" or "deny"
	Reason  string `json:"reason,omitempty"` // why, as recorded on the log (≤ 500 bytes)
	Actor   string `json:"-"`                // who: "person:<name>" from the request, set by the server
	By      string `json:"by,omitempty"`     // the person's name, [A-Za-z0-9._@-], ≤ 64 bytes
}

// Reviews records verdicts. Its Decide appends the review's decision to
// the session (reducers/review decides) and returns the stream sequence
// of the batch; errors wrap events.ErrNotFound (no such open review),
// events.ErrRejected (the review is closed or the verdict refused).
type Reviews interface {
	Decide(ctx context.Context, v Verdict) (uint64, error)
}

func (s *Server) review(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Reviews == nil {
		s.fail(w, r, fmt.Errorf("%w: this server records no review verdicts yet", errUnavailable))
		return
	}
	var v Verdict
	if err := decodeBody(r, &v, 8<<10); err != nil {
		s.fail(w, r, err)
		return
	}
	v.Review = r.PathValue("id")
	switch {
	case v.Verdict != "allow" && v.Verdict != "deny":
		s.fail(w, r, fmt.Errorf("%w: verdict %q: want allow or deny", errBadRequest, v.Verdict))
		return
	case v.Session == "":
		s.fail(w, r, fmt.Errorf("%w: session: want the session the review belongs to", errBadRequest))
		return
	case len(v.Reason) > 500:
		s.fail(w, r, fmt.Errorf("%w: reason: %d bytes, the most is 500", errBadRequest, len(v.Reason)))
		return
	case !validName(v.By, 64):
		s.fail(w, r, fmt.Errorf("%w: by %q: want a name of [A-Za-z0-9._@-], at most 64 bytes", errBadRequest, v.By))
		return
	}
	v.Actor = "person:" + cmpOr(v.By, "http")
	seq, err := s.cfg.Reviews.Decide(r.Context(), v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"seq": seq, "review": v.Review, "verdict": v.Verdict, "actor": v.Actor})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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

// decodeBody decodes r's JSON body into v: at most max bytes, no unknown
// fields, one value.
func decodeBody(r *http.Request, v any, max int64) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return fmt.Errorf("%w: read body: %v", errBadRequest, err)
	}
	if int64(len(body)) > max {
		return fmt.Errorf("%w: body over %d bytes", errBadRequest, max)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: body: %v", errBadRequest, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: body: trailing data after the JSON value", errBadRequest)
	}
	return nil
}
