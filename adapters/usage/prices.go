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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/jsonfault"
	"github.com/logbook-dev/logbook/reducers/session"
)

// Price is what one million tokens of a model cost, in the table's
// currency: an entry of a price table file (prices.json, versions 1 to
// 3) or one read from LiteLLM's table.
type Price struct {
	Source string `json:"source,omitempty"` // a key of Table.Sources
	Date   string `json:"date,omitempty"`   // YYYY-MM-DD this price was read from its source; "": the table's Date
	// Until, YYYY-MM-DD, bounds the price to the calls made up to the
	// end of that UTC day (a promotional price); later calls are priced
	// by the next table down (LiteLLM's). "": no bound.
	Until      string  `json:"until,omitempty"`
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheWrite float64 `json:"cache_write"` // a five-minute cache write
	CacheRead  float64 `json:"cache_read"`
	// CacheWrite1h is a one-hour cache write; nil: twice Input, the rule
	// Anthropic bills by.
	CacheWrite1h *float64 `json:"cache_write_1h,omitempty"`
	// ContextWindow is the model's input window in tokens; 0: unknown.
	ContextWindow int64 `json:"context_window,omitempty"`
	// Above holds the rates of a call whose input (fresh, cache writes
	// and cache reads) went over a number of tokens, keyed by that number
	// ("200000", "272000": one of session.LongContextThresholds()); a rate
	// it leaves out is the base one.
	Above map[string]Rates `json:"above,omitempty"`
	// Tiers holds the rates of a service tier ("priority", "flex",
	// "batch"); a tier it does not name has no price.
	Tiers map[string]Rates `json:"tiers,omitempty"`
}

// Rates are prices per million tokens that replace a Price's own; nil
// leaves the one beneath.
type Rates struct {
	Input        *float64 `json:"input,omitempty"`
	Output       *float64 `json:"output,omitempty"`
	CacheWrite   *float64 `json:"cache_write,omitempty"`
	CacheWrite1h *float64 `json:"cache_write_1h,omitempty"`
	CacheRead    *float64 `json:"cache_read,omitempty"`
}

// LiteLLM describes the copy of LiteLLM's table a Table holds.
type LiteLLM struct {
	Source  string `json:"source"`  // what it is a subset of, and its licence
	Version string `json:"version"` // the upstream revision it was taken from
	Read    string `json:"read"`    // YYYY-MM-DD it was taken
	Models  int    `json:"models"`  // the entries it holds
}

// Table is a versioned, dated price table: Models (Logbook's entries and
// a data dir's prices.json over them) over LiteLLM's.
type Table struct {
	Version  int               `json:"version"`
	Date     string            `json:"date"` // YYYY-MM-DD the prices were read from their sources
	Currency string            `json:"currency"`
	Unit     string            `json:"unit"`
	Sources  map[string]string `json:"sources"`
	Models   map[string]Price  `json:"models"`
	// Override names the file that overrode some models, "" if none.
	Override string `json:"override,omitempty"`
	// LiteLLM describes the LiteLLM table beneath Models; its entries are
	// not in Models.
	LiteLLM LiteLLM `json:"-"`
	litellm map[string]Price
}

//go:embed prices.json
var shipped []byte

//go:embed litellm.json
var shippedLiteLLM []byte

// SourceLiteLLM is the Source of a price read from LiteLLM's table.
const SourceLiteLLM = "litellm"

// Shipped returns the price table shipped with Logbook: a table of the
// caller's own (its Models and Sources may be changed), over the LiteLLM
// table parsed once per process and shared read-only.
func Shipped() *Table {
	base := shippedTable()
	t := *base
	t.Sources = maps.Clone(base.Sources)
	t.Models = maps.Clone(base.Models)
	return &t
}

// shippedTable parses the embedded tables, once.
var shippedTable = sync.OnceValue(func() *Table {
	t, err := parseTable(shipped)
	if err != nil {
		panic(fmt.Sprintf("usage: shipped price table: %v", err))
	}
	info, models, err := ParseLiteLLM(shippedLiteLLM)
	if err != nil {
		panic(fmt.Sprintf("usage: shipped LiteLLM table: %v", err))
	}
	t.LiteLLM, t.litellm = info, models
	return t
})

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
		if p.Source == "" {
			p.Source = "override"
		}
		if p.Date == "" {
			p.Date = o.Date
		}
		t.Models[m] = p
	}
	for k, v := range o.Sources {
		t.Sources[k] = v
	}
	t.Sources["override"] = path
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
			fe = fmt.Errorf("%w (want version, date, currency, unit, sources, models; a model's: source, date, until, input, output, cache_write, cache_write_1h, cache_read, context_window, above, tiers)", fe)
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
		if err := checkPrice(t.Models[m]); err != nil {
			return nil, fmt.Errorf("model %q: %w", m, err)
		}
	}
	return &t, nil
}

// checkPrice refuses a negative, NaN, infinite or too large price of p,
// an until that is not a day, and a band that is not a threshold.
func checkPrice(p Price) error {
	type field struct {
		name string
		v    *float64
	}
	fs := []field{{"input", &p.Input}, {"output", &p.Output}, {"cache_write", &p.CacheWrite}, {"cache_read", &p.CacheRead}, {"cache_write_1h", p.CacheWrite1h}}
	rates := func(prefix string, r Rates) {
		fs = append(fs, field{prefix + "input", r.Input}, field{prefix + "output", r.Output}, field{prefix + "cache_write", r.CacheWrite},
			field{prefix + "cache_write_1h", r.CacheWrite1h}, field{prefix + "cache_read", r.CacheRead})
	}
	for _, k := range slices.Sorted(maps.Keys(p.Above)) {
		n, err := strconv.ParseInt(k, 10, 64)
		if err != nil || !slices.Contains(session.LongContextThresholds(), n) {
			return fmt.Errorf("above %q: want one of %v (input tokens)", k, session.LongContextThresholds())
		}
		rates("above."+k+".", p.Above[k])
	}
	for _, k := range slices.Sorted(maps.Keys(p.Tiers)) {
		rates("tiers."+k+".", p.Tiers[k])
	}
	for _, f := range fs {
		switch {
		case f.v == nil:
		case *f.v < 0:
			return fmt.Errorf("%s %g is a negative price", f.name, *f.v)
		case !(*f.v <= MaxPrice): // NaN and Inf included
			return fmt.Errorf("%s %g is over the bound of %g dollars per million tokens", f.name, *f.v, float64(MaxPrice))
		}
	}
	if p.Until != "" {
		if _, err := time.Parse(time.DateOnly, p.Until); err != nil {
			return fmt.Errorf("until %q: want a day, YYYY-MM-DD", p.Until)
		}
	}
	if p.ContextWindow < 0 {
		return fmt.Errorf("context_window %d is negative", p.ContextWindow)
	}
	return nil
}

// TableVersions are the price table versions parseTable reads: 1 and 2
// are the same shape (2 dates and sources each model's entry); 3 adds
// until, cache_write_1h, context_window, above and tiers.
var TableVersions = []int{1, 2, 3}

// MaxPrice bounds every price of a table, in dollars per million tokens:
// a larger one is a mistake, not a price, and with it a cost could
// overflow to +Inf, which JSON cannot carry.
const MaxPrice = 1e6

// liteLLMFile is the shape of litellm.json: a subset of LiteLLM's
// model_prices_and_context_window.json with where it came from.
type liteLLMFile struct {
	Source  string                     `json:"source"`
	Version string                     `json:"version"`
	Read    string                     `json:"read"`
	Models  map[string]json.RawMessage `json:"models"`
}

// liteLLMKey matches the price fields of a LiteLLM entry that Logbook
// reads beyond the base ones: a long-context band (_above_200k_tokens)
// and a service tier (_priority, _flex, _batches).
var liteLLMKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(input_cost_per_token|output_cost_per_token|cache_creation_input_token_cost|cache_creation_input_token_cost_above_1hr|cache_read_input_token_cost)(?:_above_(\d+)k_tokens|_(priority|flex|batches))$`)
})

// ParseLiteLLM reads b, a litellm.json (the subset of LiteLLM's
// model_prices_and_context_window.json that .ci/refresh-prices
// writes: {source, version, read, models: {name: LiteLLM entry}}), into
// prices per million tokens with Source SourceLiteLLM: input_cost_per_token,
// output_cost_per_token, cache_creation_input_token_cost (absent: cache
// writes billed as input, as OpenAI does), cache_creation_input_token_cost_above_1hr,
// cache_read_input_token_cost (absent: input), max_input_tokens as the
// context window, *_above_<N>k_tokens as Above (N thousand tokens) and
// *_priority, *_flex and *_batches as Tiers priority, flex and batch. An
// entry without input_cost_per_token or output_cost_per_token is left
// out. Its errors name the entry and field.
func ParseLiteLLM(b []byte) (LiteLLM, map[string]Price, error) {
	var f liteLLMFile
	if err := json.Unmarshal(b, &f); err != nil {
		return LiteLLM{}, nil, jsonfault.Fault(b, err, "the LiteLLM table")
	}
	out := map[string]Price{}
	for _, name := range slices.Sorted(maps.Keys(f.Models)) {
		p, ok, err := liteLLMPrice(f.Models[name])
		if err != nil {
			return LiteLLM{}, nil, fmt.Errorf("LiteLLM entry %q: %w", name, err)
		}
		if !ok {
			continue
		}
		p.Date = f.Read
		if err := checkPrice(p); err != nil {
			return LiteLLM{}, nil, fmt.Errorf("LiteLLM entry %q: %w", name, err)
		}
		out[name] = p
	}
	return LiteLLM{Source: f.Source, Version: f.Version, Read: f.Read, Models: len(out)}, out, nil
}

// liteLLMPrice converts one LiteLLM entry; ok is false for an entry
// without a per-token input and output price.
func liteLLMPrice(raw json.RawMessage) (Price, bool, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return Price{}, false, fmt.Errorf("not an object: %v", err)
	}
	num := func(k string) (*float64, error) {
		r, ok := all[k]
		if !ok || string(r) == "null" {
			return nil, nil
		}
		var v float64
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, fmt.Errorf("%s: want a number, got %s", k, r)
		}
		v *= 1e6 // per token → per million tokens
		v = math.Round(v*1e9) / 1e9
		return &v, nil
	}
	in, err := num("input_cost_per_token")
	if err != nil {
		return Price{}, false, err
	}
	out, err := num("output_cost_per_token")
	if err != nil {
		return Price{}, false, err
	}
	if in == nil || out == nil {
		return Price{}, false, nil
	}
	p := Price{Source: SourceLiteLLM, Input: *in, Output: *out, CacheWrite: *in, CacheRead: *in}
	if v, err := num("cache_creation_input_token_cost"); err != nil {
		return Price{}, false, err
	} else if v != nil {
		p.CacheWrite = *v
	}
	if v, err := num("cache_read_input_token_cost"); err != nil {
		return Price{}, false, err
	} else if v != nil {
		p.CacheRead = *v
	}
	if p.CacheWrite1h, err = num("cache_creation_input_token_cost_above_1hr"); err != nil {
		return Price{}, false, err
	}
	if r, ok := all["max_input_tokens"]; ok {
		var w float64
		if json.Unmarshal(r, &w) == nil && w > 0 {
			p.ContextWindow = int64(w)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		m := liteLLMKey().FindStringSubmatch(k)
		if m == nil {
			continue
		}
		v, err := num(k)
		if err != nil {
			return Price{}, false, err
		}
		if v == nil {
			continue
		}
		var r Rates
		switch {
		case m[2] != "":
			n, _ := strconv.ParseInt(m[2], 10, 64)
			key := strconv.FormatInt(n*1000, 10)
			if !slices.Contains(session.LongContextThresholds(), n*1000) {
				continue // a band Logbook does not keep
			}
			if p.Above == nil {
				p.Above = map[string]Rates{}
			}
			r = p.Above[key]
			setRate(&r, m[1], v)
			p.Above[key] = r
		default:
			tier := m[3]
			if tier == "batches" {
				tier = "batch"
			}
			if p.Tiers == nil {
				p.Tiers = map[string]Rates{}
			}
			r = p.Tiers[tier]
			setRate(&r, m[1], v)
			p.Tiers[tier] = r
		}
	}
	return p, true, nil
}

func setRate(r *Rates, field string, v *float64) {
	switch field {
	case "input_cost_per_token":
		r.Input = v
	case "output_cost_per_token":
		r.Output = v
	case "cache_creation_input_token_cost":
		r.CacheWrite = v
	case "cache_creation_input_token_cost_above_1hr":
		r.CacheWrite1h = v
	case "cache_read_input_token_cost":
		r.CacheRead = v
	}
}

// dated matches a model name's release-date suffix, "-20251001".
var dated = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-\d{8}$`) })

// names returns the names model's price is looked up by: its own, then
// without a release-date suffix (claude-haiku-4-5-20251001 is
// claude-haiku-4-5).
func names(model string) []string {
	if d := dated().ReplaceAllString(model, ""); d != model {
		return []string{model, d}
	}
	return []string{model}
}

// entry returns the entry that prices model's calls at minute and its
// name: Models' own (the data dir's over Logbook's) unless its until is
// past (a zero minute is now: past every until), else LiteLLM's, each by
// the model's name and then without a release-date suffix.
func (t *Table) entry(model string, minute time.Time) (string, Price, bool) {
	for _, n := range names(model) {
		if p, ok := t.Models[n]; ok && (p.Until == "" || !minute.IsZero() && !after(minute, p.Until)) {
			return n, p, true
		}
	}
	for _, n := range names(model) {
		if p, ok := t.litellm[n]; ok {
			return n, p, true
		}
	}
	return "", Price{}, false
}

// after reports whether minute is after the end of the UTC day until
// ("": never).
func after(minute time.Time, until string) bool {
	if until == "" {
		return false
	}
	d, err := time.Parse(time.DateOnly, until)
	return err == nil && !minute.Before(d.AddDate(0, 0, 1))
}

// PriceOf returns the price of model as of now: Models' own entry (the
// data dir's over Logbook's), else LiteLLM's, each by its name and then
// without a release-date suffix. ok is false when no table names it.
func (t *Table) PriceOf(model string) (Price, bool) {
	_, p, ok := t.entry(model, time.Time{})
	return p, ok
}

// DateOf returns the day model's price was read from its source: its
// entry's own date, else the table's.
func (t *Table) DateOf(model string) string {
	if p, ok := t.PriceOf(model); ok && p.Date != "" {
		return p.Date
	}
	return t.Date
}

// Rate is the rates, per million tokens, that priced a part of a usage,
// and where they came from.
type Rate struct {
	Entry        string  `json:"entry"`          // the table entry's name
	Source       string  `json:"source"`         // its source: "litellm", a key of Table.Sources
	Date         string  `json:"date,omitempty"` // when the source was read
	Tier         string  `json:"tier"`           // "standard", "priority", "flex", "batch"
	Above        int64   `json:"above"`          // the long-context band applied (input tokens over it), 0: none
	Input        float64 `json:"input"`
	Output       float64 `json:"output"`
	CacheWrite   float64 `json:"cache_write"`    // five-minute
	CacheWrite1h float64 `json:"cache_write_1h"` // one-hour
	CacheRead    float64 `json:"cache_read"`
}

// ErrNoPrice is the error of a usage that no entry prices: a model the
// table does not name, or a service tier its entry has no rates for.
var ErrNoPrice = errors.New("no price")

// RateOf returns the rates of a call of model made at minute, served in
// tier ("" standard) with an input over above tokens (a band of
// session.LongContextThresholds(), 0: none): the entry's base rates, with
// its rates of the largest band not over above put over them, and its
// tier's over those; a one-hour cache write is cache_write_1h where the
// entry gives one, else twice input. Its error wraps ErrNoPrice.
func (t *Table) RateOf(model string, minute time.Time, tier string, above int64) (Rate, error) {
	name, p, ok := t.entry(model, minute)
	if !ok {
		return Rate{}, fmt.Errorf("%w for model %q", ErrNoPrice, model)
	}
	r := Rate{Entry: name, Source: p.Source, Date: p.Date, Tier: "standard", Input: p.Input, Output: p.Output, CacheWrite: p.CacheWrite, CacheRead: p.CacheRead}
	oneHour := p.CacheWrite1h
	put := func(x Rates) {
		set := func(dst *float64, v *float64) {
			if v != nil {
				*dst = *v
			}
		}
		set(&r.Input, x.Input)
		set(&r.Output, x.Output)
		set(&r.CacheWrite, x.CacheWrite)
		set(&r.CacheRead, x.CacheRead)
		switch {
		case x.CacheWrite1h != nil:
			oneHour = x.CacheWrite1h
		case x.Input != nil:
			oneHour = nil // twice the new input
		}
	}
	if above > 0 {
		var best int64
		for k := range p.Above {
			if n, _ := strconv.ParseInt(k, 10, 64); n <= above && n > best {
				best = n
			}
		}
		if best > 0 {
			r.Above = best
			put(p.Above[strconv.FormatInt(best, 10)])
		}
	}
	if tier != "" {
		x, ok := p.Tiers[tier]
		if !ok {
			return Rate{}, fmt.Errorf("%w for model %q in service tier %q (entry %s)", ErrNoPrice, model, tier, name)
		}
		r.Tier = tier
		put(x)
	}
	if oneHour != nil {
		r.CacheWrite1h = *oneHour
	} else {
		r.CacheWrite1h = 2 * r.Input
	}
	return r, nil
}

// costAt returns what tok cost at r's rates: five-minute cache writes
// (CacheWrite less CacheWrite1h) and one-hour ones apart.
func costAt(r Rate, tok Tokens) float64 {
	five := tok.CacheWrite - tok.CacheWrite1h
	return (float64(tok.Input)*r.Input + float64(tok.Output)*r.Output + float64(five)*r.CacheWrite +
		float64(tok.CacheWrite1h)*r.CacheWrite1h + float64(tok.CacheRead)*r.CacheRead) / 1e6
}

// Cost returns what tok of model cost at its latest standard rates (no
// long-context band), and false when model has no price or the cost is
// not a finite number (a table built in code past parseTable's bounds),
// so that no Inf or NaN reaches a report or JSON.
func (t *Table) Cost(model string, tok Tokens) (float64, bool) {
	r, err := t.RateOf(model, time.Time{}, "", 0)
	if err != nil {
		return 0, false
	}
	c := costAt(r, tok)
	if math.IsInf(c, 0) || math.IsNaN(c) {
		return 0, false
	}
	return c, true
}

// Explained is the part of a line's tokens one Rate priced, and its cost.
type Explained struct {
	Rate
	Tokens Tokens  `json:"tokens"`
	Cost   float64 `json:"cost"`
}

// LineCost returns what the tokens of l cost, each usage bucket priced at
// its own minute, tier and band (RateOf), with the parts by rate in
// entry, tier and band order. Its error (wrapping ErrNoPrice) names the
// first model or tier with no price, and then the cost is not given; a
// cost that is not a finite number is an error too.
func (t *Table) LineCost(l Line) (float64, []Explained, error) {
	return t.bucketsCost(l.buckets)
}

// SubagentsCost is LineCost of the subagents' tokens of l.
func (t *Table) SubagentsCost(l Line) (float64, []Explained, error) {
	return t.bucketsCost(l.subBuckets)
}

func (t *Table) bucketsCost(bs []session.UsageBucket) (float64, []Explained, error) {
	var parts []Explained
	for _, b := range bs {
		r, err := t.RateOf(b.Model, b.Minute, b.Tier, b.Above)
		if err != nil {
			return 0, nil, err
		}
		i := slices.IndexFunc(parts, func(e Explained) bool { return e.Rate == r })
		if i < 0 {
			parts = append(parts, Explained{Rate: r})
			i = len(parts) - 1
		}
		parts[i].Tokens.add(b)
	}
	var total float64
	for i := range parts {
		parts[i].Cost = costAt(parts[i].Rate, parts[i].Tokens)
		total += parts[i].Cost
	}
	if math.IsInf(total, 0) || math.IsNaN(total) {
		return 0, nil, fmt.Errorf("%w: the cost is not a finite number", ErrNoPrice)
	}
	slices.SortFunc(parts, func(a, b Explained) int {
		return strings.Compare(fmt.Sprintf("%s\x00%s\x00%012d", a.Entry, a.Tier, a.Above), fmt.Sprintf("%s\x00%s\x00%012d", b.Entry, b.Tier, b.Above))
	})
	return total, parts, nil
}

// ContextWindow returns model's input window in tokens from the table,
// or 0 when no entry gives one.
func (t *Table) ContextWindow(model string) int64 {
	if p, ok := t.PriceOf(model); ok && p.ContextWindow > 0 {
		return p.ContextWindow
	}
	for _, n := range names(model) {
		if p, ok := t.litellm[n]; ok {
			return p.ContextWindow
		}
	}
	return 0
}

// LiteLLMProviders are the litellm_provider values whose entries
// SubsetLiteLLM keeps: the vendors whose agents Logbook reads.
var LiteLLMProviders = []string{"anthropic", "openai"}

// liteLLMKept matches the members of a LiteLLM entry SubsetLiteLLM keeps:
// the per-token prices Logbook reads (and their band and tier variants),
// the input window, the provider and the mode.
var liteLLMKept = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(litellm_provider|mode|max_input_tokens|(input_cost_per_token|output_cost_per_token|cache_creation_input_token_cost|cache_creation_input_token_cost_above_1hr|cache_read_input_token_cost)(_above_\d+k_tokens|_priority|_flex|_batches)?)$`)
})

// SubsetLiteLLM returns the litellm.json Logbook ships, made from full,
// the text of LiteLLM's model_prices_and_context_window.json (a JSON
// object of model name to entry, with a "sample_spec" entry): the entries
// of LiteLLMProviders in mode chat or responses that have a per-token
// input and output price, each with the members liteLLMKept matches, and
// source, version (the upstream release or revision it came from) and
// read (YYYY-MM-DD) beside them. Its error names the entry that cannot be
// read; the result is read back with ParseLiteLLM before it is returned.
func SubsetLiteLLM(full []byte, version, read string) ([]byte, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(full, &all); err != nil {
		return nil, jsonfault.Fault(full, err, "the LiteLLM table")
	}
	if _, err := time.Parse(time.DateOnly, read); err != nil {
		return nil, fmt.Errorf("read %q: want a day, YYYY-MM-DD", read)
	}
	out := liteLLMFile{
		Source:  "LiteLLM model_prices_and_context_window.json, https://github.com/BerriAI/litellm (MIT licence): the entries of the anthropic and openai providers that Logbook prices, price and context-window fields only",
		Version: version, Read: read, Models: map[string]json.RawMessage{},
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		if name == "sample_spec" {
			continue
		}
		var e map[string]json.RawMessage
		if json.Unmarshal(all[name], &e) != nil {
			continue // not an entry
		}
		var provider, mode string
		_ = json.Unmarshal(e["litellm_provider"], &provider)
		_ = json.Unmarshal(e["mode"], &mode)
		if !slices.Contains(LiteLLMProviders, provider) || (mode != "chat" && mode != "responses") ||
			e["input_cost_per_token"] == nil || e["output_cost_per_token"] == nil {
			continue
		}
		kept := map[string]json.RawMessage{}
		for k, v := range e {
			if liteLLMKept().MatchString(k) {
				kept[k] = v
			}
		}
		b, err := json.Marshal(kept)
		if err != nil {
			return nil, fmt.Errorf("LiteLLM entry %q: %w", name, err)
		}
		out.Models[name] = b
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if _, _, err := ParseLiteLLM(b); err != nil {
		return nil, err
	}
	return b, nil
}
