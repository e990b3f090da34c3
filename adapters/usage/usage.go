// Package usage answers "what did this agent spend": it groups the usage
// the session projection keeps (session.State.Usage: tokens per model and
// UTC hour, folded from the adapters' usage signals) by session, model,
// day or project, and prices tokens at query time from a versioned price
// table, so a price correction never rewrites history.
//
// The price table ships with the binary (prices.json beside this file:
// dated, its sources named, per million tokens) and a file in the data
// dir (prices.json, the same format) overrides it model by model. A model
// the table does not name has no price: it shows its tokens and "no
// price", never $0.
package usage

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/jsonfault"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Tokens are token counts summed over usage buckets.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheWrite int64 `json:"cache_write"`
	CacheRead  int64 `json:"cache_read"`
	Reasoning  int64 `json:"reasoning"` // of Output
	Calls      int64 `json:"calls"`
}

// Total returns input, output and cache tokens summed.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheWrite + t.CacheRead }

func (t *Tokens) add(b session.UsageBucket) {
	t.Input += b.Input
	t.Output += b.Output
	t.CacheWrite += b.CacheWrite
	t.CacheRead += b.CacheRead
	t.Reasoning += b.Reasoning
	t.Calls += b.Calls
}

// Plus returns t and u summed.
func (t Tokens) Plus(u Tokens) Tokens {
	return Tokens{t.Input + u.Input, t.Output + u.Output, t.CacheWrite + u.CacheWrite, t.CacheRead + u.CacheRead, t.Reasoning + u.Reasoning, t.Calls + u.Calls}
}

// Groupings Group knows.
const (
	BySession = "session"
	ByModel   = "model"
	ByDay     = "day"
	ByProject = "project"
)

// Query selects and groups usage.
type Query struct {
	By      string         // BySession (default), ByModel, ByDay or ByProject
	Since   time.Time      // buckets of the hours that end after it; zero: all
	Session string         // only this session and its subagents; "": all
	Loc     *time.Location // the zone days are cut in; nil: UTC
}

// Line is the tokens of one group and model. For BySession, Parent names
// the parent of a subagent's session, and a parent's lines carry its
// subagents' sum in Subagents (never folded into its own tokens).
type Line struct {
	Key       string  `json:"key"`   // session id, model, day (YYYY-MM-DD) or project (cwd)
	Model     string  `json:"model"` // "" when the agent did not name it
	Tokens    Tokens  `json:"tokens"`
	Parent    string  `json:"parent,omitempty"`
	Subagents *Tokens `json:"subagents,omitempty"`
}

// Group sums the usage of ss by q, one line per group and model, in key
// then model order (days in time order).
func Group(ss []session.State, q Query) ([]Line, error) {
	loc := q.Loc
	if loc == nil {
		loc = time.UTC
	}
	by := q.By
	if by == "" {
		by = BySession
	}
	switch by {
	case BySession, ByModel, ByDay, ByProject:
	default:
		return nil, fmt.Errorf("usage: unknown grouping %q (want session, model, day or project)", by)
	}
	type key struct{ k, model string }
	sums := map[key]*Line{}
	children := map[key]*Tokens{} // parent session and model → its subagents' sum
	for _, s := range ss {
		selected := q.Session == "" || s.ID == q.Session || s.Parent == q.Session
		if !selected && (by != BySession || s.Parent == "") {
			continue
		}
		for _, b := range s.Usage {
			if !q.Since.IsZero() && !b.Hour.Add(time.Hour).After(q.Since) { // the hour ended by then
				continue
			}
			if by == BySession && s.Parent != "" {
				// A parent's subagents' sum is over all of them, even
				// when the query selects only one.
				c := children[key{s.Parent, b.Model}]
				if c == nil {
					c = &Tokens{}
					children[key{s.Parent, b.Model}] = c
				}
				c.add(b)
			}
			if !selected {
				continue
			}
			var k string
			switch by {
			case BySession:
				k = s.ID
			case ByModel:
				k = b.Model
			case ByDay:
				k = b.Hour.In(loc).Format("2006-01-02")
			case ByProject:
				k = s.Cwd
			}
			l := sums[key{k, b.Model}]
			if l == nil {
				l = &Line{Key: k, Model: b.Model}
				if by == BySession {
					l.Parent = s.Parent
				}
				sums[key{k, b.Model}] = l
			}
			l.Tokens.add(b)
		}
	}
	for k, c := range children {
		// Only on a line the parent spent on itself: a model only its
		// subagents used gets no line of zeros (Report.Subagents has the
		// sum over all models).
		if l := sums[k]; l != nil {
			l.Subagents = c
		}
	}
	out := make([]Line, 0, len(sums))
	for _, l := range sums {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Model < out[j].Model
	})
	return out, nil
}

// Limit is the latest reading of one plan-limit window over all sessions,
// and whether it is past its reset at the time asked.
type Limit struct {
	session.LimitReading
	Session string `json:"session"` // the session whose reading it is
	Expired bool   `json:"expired"` // the window reset since it was measured: its percentage no longer holds
}

// Limits returns the latest reading per account and window among ss, as
// of now, in account then window order.
func Limits(ss []session.State, now time.Time) []Limit {
	return limitsOf(ss, nil, now)
}

// limitsOf is Limits of the accounts in accounts only; nil: all.
func limitsOf(ss []session.State, accounts map[string]bool, now time.Time) []Limit {
	type key struct{ account, window string }
	latest := map[key]Limit{}
	for _, s := range ss {
		for _, r := range s.Limits {
			if accounts != nil && !accounts[r.Account] {
				continue
			}
			k := key{r.Account, r.Window}
			if l, ok := latest[k]; !ok || r.MeasuredAt.After(l.MeasuredAt) {
				latest[k] = Limit{LimitReading: r, Session: s.ID}
			}
		}
	}
	out := make([]Limit, 0, len(latest))
	for _, l := range latest {
		l.Expired = l.ResetsAt > 0 && !now.Before(time.Unix(l.ResetsAt, 0))
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Account != out[j].Account {
			return out[i].Account < out[j].Account
		}
		return out[i].Window < out[j].Window
	})
	return out
}

// Price is what one million tokens of a model cost, in the table's
// currency.
type Price struct {
	Source     string  `json:"source,omitempty"` // a key of Table.Sources
	Date       string  `json:"date,omitempty"`   // YYYY-MM-DD this price was read from its source; "": the table's Date
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheWrite float64 `json:"cache_write"`
	CacheRead  float64 `json:"cache_read"`
}

// Table is a versioned, dated price table.
type Table struct {
	Version  int               `json:"version"`
	Date     string            `json:"date"` // YYYY-MM-DD the prices were read from their sources
	Currency string            `json:"currency"`
	Unit     string            `json:"unit"`
	Sources  map[string]string `json:"sources"`
	Models   map[string]Price  `json:"models"`
	// Override names the file that overrode some models, "" if none.
	Override string `json:"override,omitempty"`
}

//go:embed prices.json
var shipped []byte

// Shipped returns the price table shipped with Logbook.
func Shipped() *Table {
	t, err := parseTable(shipped)
	if err != nil {
		panic(fmt.Sprintf("usage: shipped price table: %v", err))
	}
	return t
}

// MaxTableFile is the most bytes a price table file may hold: 4 MiB.
const MaxTableFile = 4 << 20

// LoadTable returns the shipped table with the models of the table file
// at path (if it exists) put over it. Errors name path: a file that is
// not a price table, a negative price, a table of another currency.
func LoadTable(path string) (*Table, error) {
	t := Shipped()
	b, err := hookspool.ReadRegular(path, MaxTableFile)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		// A FIFO or a device in its place is refused without reading.
		return nil, fmt.Errorf("price table %w", err) // err names path
	}
	o, err := parseTable(b)
	if err != nil {
		return nil, fmt.Errorf("price table %s: %w", path, err)
	}
	if o.Currency != "" && o.Currency != t.Currency {
		return nil, fmt.Errorf("price table %s: currency %s, the shipped table's is %s", path, o.Currency, t.Currency)
	}
	for m, p := range o.Models {
		t.Models[m] = p
	}
	for k, v := range o.Sources {
		t.Sources[k] = v
	}
	t.Override = path
	if o.Date != "" {
		t.Date += ", " + o.Date + " (override)"
	}
	return t, nil
}

// parseTable reads b as a price table (the JSON object Table describes,
// no other members). Its errors say where: the line and column of a
// syntax error, of a member of the wrong type (with the member's path,
// "models.x.input") or of an unknown member.
func parseTable(b []byte) (*Table, error) {
	var t Table
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		fe := jsonfault.Fault(b, err, "the table")
		if jsonfault.UnknownMember(err) {
			fe = fmt.Errorf("%w (want version, date, currency, unit, sources, models; a model's: source, date, input, output, cache_write, cache_read)", fe)
		}
		return nil, fe
	}
	if t.Models == nil {
		t.Models = map[string]Price{}
	}
	if t.Sources == nil {
		t.Sources = map[string]string{}
	}
	if !slices.Contains(TableVersions, t.Version) {
		v := fmt.Sprint(t.Version)
		if t.Version == 0 {
			v = "missing (0)"
		}
		return nil, fmt.Errorf("version %s: this Logbook reads price table versions %v", v, TableVersions)
	}
	if len(t.Models) == 0 {
		return nil, errors.New(`"models" names no model: a price table prices at least one`)
	}
	for _, m := range slices.Sorted(maps.Keys(t.Models)) {
		p := t.Models[m]
		for _, f := range []struct {
			name string
			v    float64
		}{{"input", p.Input}, {"output", p.Output}, {"cache_write", p.CacheWrite}, {"cache_read", p.CacheRead}} {
			switch {
			case f.v < 0:
				return nil, fmt.Errorf("model %q: %s %g is a negative price", m, f.name, f.v)
			case !(f.v <= MaxPrice): // NaN and Inf included
				return nil, fmt.Errorf("model %q: %s %g is over the bound of %g dollars per million tokens", m, f.name, f.v, float64(MaxPrice))
			}
		}
	}
	return &t, nil
}

// TableVersions are the price table versions parseTable reads: 1 and 2
// are the same shape (2 dates and sources each model's entry).
var TableVersions = []int{1, 2}

// MaxPrice bounds every price of a table, in dollars per million tokens:
// a larger one is a mistake, not a price, and with it a cost could
// overflow to +Inf, which JSON cannot carry.
const MaxPrice = 1e6

// DateOf returns the day model's price was read from its source: its
// entry's own date, else the table's.
func (t *Table) DateOf(model string) string {
	if p, ok := t.PriceOf(model); ok && p.Date != "" {
		return p.Date
	}
	return t.Date
}

// dated matches a model name's release-date suffix, "-20251001".
var dated = regexp.MustCompile(`-\d{8}$`)

// PriceOf returns the price of model: its own entry, else the entry of
// its name without a release-date suffix (claude-haiku-4-5-20251001 is
// claude-haiku-4-5). ok is false when the table names neither.
func (t *Table) PriceOf(model string) (Price, bool) {
	if p, ok := t.Models[model]; ok {
		return p, true
	}
	p, ok := t.Models[dated.ReplaceAllString(model, "")]
	return p, ok
}

// Cost returns what tok of model cost, and false when model has no price
// or the cost is not a finite number (a table built in code past
// parseTable's bounds), so that no Inf or NaN reaches a report or JSON.
func (t *Table) Cost(model string, tok Tokens) (float64, bool) {
	p, ok := t.PriceOf(model)
	if !ok {
		return 0, false
	}
	c := (float64(tok.Input)*p.Input + float64(tok.Output)*p.Output +
		float64(tok.CacheWrite)*p.CacheWrite + float64(tok.CacheRead)*p.CacheRead) / 1e6
	if math.IsInf(c, 0) || math.IsNaN(c) {
		return 0, false
	}
	return c, true
}

// Unpriced returns the models of lines the table has no price for.
func (t *Table) Unpriced(lines []Line) []string {
	var out []string
	for _, l := range lines {
		if _, ok := t.PriceOf(l.Model); !ok && !slices.Contains(out, l.Model) {
			out = append(out, l.Model)
		}
	}
	sort.Strings(out)
	return out
}
