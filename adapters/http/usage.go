package httpapi

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/logbook-dev/logbook/adapters/usage"
	"github.com/logbook-dev/logbook/reducers/session"
)

// SessionUsage is what a session spent and what its subagents spent, apart
// (a subagent's spend is never folded into its parent's), priced as
// `logbook session show` prices them. With no valid price table (a bad
// prices.json) the spends carry tokens only and PriceError says why.
type SessionUsage struct {
	Own        usage.Spend `json:"own"`
	Subagents  usage.Spend `json:"subagents"`
	PriceError string      `json:"price_error,omitempty"`
}

// prices returns the price table: Config.Prices, or the shipped one.
func (s *Server) prices() (*usage.Table, error) {
	if s.cfg.Prices == nil {
		return usage.Shipped(), nil
	}
	return s.cfg.Prices()
}

// sessionUsage prices st's spend and its subagents' (kids). A price
// table that does not load costs the cost only: the tokens are there
// and PriceError says why the cost is not.
func (s *Server) sessionUsage(st session.State, kids []session.State) SessionUsage {
	t, err := s.prices()
	u := SessionUsage{Own: usage.SpendOf([]session.State{st}, t), Subagents: usage.SpendOf(kids, t)}
	if err != nil {
		u.PriceError = "costs not shown: " + err.Error()
	}
	return u
}

// usage answers GET /v1/usage: the usage view grouped by ?by= (session,
// model, day, week, month, block or project; default session), from
// ?since= (7d, 12h, 30m or a day YYYY-MM-DD) on, of ?session= and its
// subagents, with days cut in ?tz= (UTC, Local or an IANA name), priced
// now, with ?explain=true each line's rates and ?check=true the agent's
// own counts compared: usage.Report, the JSON `logbook usage --json`
// prints.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	now := s.cfg.Clock()
	loc, err := usage.LoadZone(v.Get("tz"))
	if err != nil {
		s.fail(w, r, fmt.Errorf("%w: tz %v", errBadRequest, err))
		return
	}
	explain, err := boolParam(v, "explain")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	check, err := boolParam(v, "check")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := usage.Query{By: v.Get("by"), Session: v.Get("session"), Loc: loc, Explain: explain, Check: check}
	for _, name := range []string{"by", "session", "since", "tz"} {
		if vs, ok := v[name]; ok && (len(vs) == 0 || vs[0] == "") {
			s.fail(w, r, fmt.Errorf("%w: %s is given empty: give it a value or leave it out", errBadRequest, name))
			return
		}
	}
	if since := v.Get("since"); since != "" {
		if q.Since, err = usage.ParseSince(since, now, loc); err != nil {
			s.fail(w, r, fmt.Errorf("%w: since %v", errBadRequest, err))
			return
		}
	}
	if _, err := s.readCaughtUp(w, r); err != nil {
		s.fail(w, r, err)
		return
	}
	if q.Session != "" {
		if q.Session, err = s.resolveSession(q.Session); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	t, err := s.prices()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ss, err := s.store.Sessions("")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := usage.NewReport(ss, q, t, now)
	if err != nil {
		s.fail(w, r, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// boolParam reads the query parameter name of v as a switch: false when
// it is absent, true or false when it says so; anything else (empty,
// "1", "TRUE", "yes") is a 400 naming it, never read as false.
func boolParam(v url.Values, name string) (bool, error) {
	vs, ok := v[name]
	if !ok {
		return false, nil
	}
	switch vs[0] {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s %q: want true or false", errBadRequest, name, vs[0])
}
