package session

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Bounds on what a State keeps of its usage.
const (
	// RecentMessages is how many message ids a State remembers with what
	// was counted for them, so a message whose usage an agent writes on
	// several lines counts once.
	RecentMessages = 64
	// MaxUsageBuckets bounds a session's usage buckets (one per model,
	// minute, tier and band); past it, a new minute folds into the latest
	// bucket of its model, tier and band (else the latest bucket).
	MaxUsageBuckets = 4000
	// MaxCounted bounds a State's index of counted usage (State.Counted):
	// 131,072 ids, 1 MiB of hashes in memory. A reading keeps at most two
	// (its message id and its request id), so a session's last 65,536
	// requests at least are known counted whatever source reports them
	// again.
	MaxCounted = 1 << 17
)

// UsageBucket is what a session spent with one model in one UTC minute,
// in one service tier and long-context band, in tokens. The usage view
// groups buckets by session, model, project, day, week or month; minutes
// let a day be cut exactly in any time zone (every IANA zone's offset is a
// whole number of minutes), and the tier and band let each call be priced
// at the rate the vendor billed it.
type UsageBucket struct {
	Model  string    `json:"model"`  // "" when the agent did not name it
	Minute time.Time `json:"minute"` // UTC, truncated to the minute
	// Tier is the service tier the calls were served in ("" standard;
	// see events.Usage.ServiceTier).
	Tier string `json:"tier,omitempty"`
	// Above is the largest of LongContextThresholds that the input of
	// each call counted here went over (input, cache writes and cache
	// reads of the one call); 0: none.
	Above        int64 `json:"above,omitempty"`
	Input        int64 `json:"input,omitempty"`
	Output       int64 `json:"output,omitempty"`
	CacheWrite   int64 `json:"cache_write,omitempty"`
	CacheWrite1h int64 `json:"cache_write_1h,omitempty"` // of CacheWrite, the one-hour kind
	CacheRead    int64 `json:"cache_read,omitempty"`
	Reasoning    int64 `json:"reasoning,omitempty"`
	Calls        int64 `json:"calls,omitempty"` // usage readings counted
}

// MaxCopied bounds a State's Copied entries (one per session copied
// from and model); past it, a new one folds into the last entry.
const MaxCopied = 64

// CopiedSpend is what the calls a session holds copies of from another
// session (From, the agent's session id) spent with one model, in
// tokens: spent in From, and counted there.
type CopiedSpend struct {
	From         string `json:"from"`
	Model        string `json:"model"` // "" when the agent did not name it
	Input        int64  `json:"input,omitempty"`
	Output       int64  `json:"output,omitempty"`
	CacheWrite   int64  `json:"cache_write,omitempty"`
	CacheWrite1h int64  `json:"cache_write_1h,omitempty"` // of CacheWrite, the one-hour kind
	CacheRead    int64  `json:"cache_read,omitempty"`
	Reasoning    int64  `json:"reasoning,omitempty"`
	Calls        int64  `json:"calls,omitempty"` // readings copied
}

// Tokens returns the entry's input, output and cache tokens summed.
func (c CopiedSpend) Tokens() int64 { return c.Input + c.Output + c.CacheWrite + c.CacheRead }

// addCopied returns cs with usage d copied from session from with model
// added (and a call, when call is set), as a new slice: cs is never
// written.
func addCopied(cs []CopiedSpend, from, model string, d events.Usage, call bool) []CopiedSpend {
	i := slices.IndexFunc(cs, func(c CopiedSpend) bool { return c.From == from && c.Model == model })
	out := slices.Clone(cs)
	if i < 0 {
		if len(out) >= MaxCopied {
			i = len(out) - 1
		} else {
			out = append(out, CopiedSpend{From: from, Model: model})
			i = len(out) - 1
		}
	}
	c := &out[i]
	c.Input += d.Input
	c.Output += d.Output
	c.CacheWrite += d.CacheWrite
	c.CacheWrite1h += d.CacheWrite1h
	c.CacheRead += d.CacheRead
	c.Reasoning += d.Reasoning
	if call {
		c.Calls++
	}
	return out
}

// LongContextThresholds are the input sizes, in tokens, past which a
// vendor bills a call at a long-context rate (LiteLLM's
// *_above_128k_tokens, *_above_200k_tokens, *_above_256k_tokens and
// *_above_272k_tokens price fields), in increasing order. A call's
// bucket records the largest one its input went over, so the rate is
// chosen when the usage is priced.
func LongContextThresholds() []int64 { return []int64{128_000, 200_000, 256_000, 272_000} }

// aboveOf returns the largest of LongContextThresholds below prompt, or 0.
func aboveOf(prompt int64) int64 {
	var a int64
	for _, t := range LongContextThresholds() {
		if prompt > t {
			a = t
		}
	}
	return a
}

// ContextUse is the context window the last model call of a session
// used: the tokens of its input (fresh, cache writes and cache reads)
// and output, the model and when it was seen.
type ContextUse struct {
	Model  string    `json:"model"`
	Tokens int64     `json:"tokens"`
	At     time.Time `json:"at"`
}

// Tokens returns the bucket's input, output and cache tokens summed.
func (b UsageBucket) Tokens() int64 { return b.Input + b.Output + b.CacheWrite + b.CacheRead }

// MessageUsage is what was counted for one message id, or one API
// request id (events.Sig.Request), or both: a reading that names either
// one is the same call's.
type MessageUsage struct {
	ID      string       `json:"id"`
	Request string       `json:"request,omitempty"`
	Usage   events.Usage `json:"usage"`
}

// same reports whether a usage signal's reading is the call m counted:
// the same message id, or the same API request id where one of the two
// names no message (a telemetry event names only the request; two
// messages of one request, each named, stay two).
func (m MessageUsage) same(sig events.Sig) bool {
	if sig.ID != "" && m.ID == sig.ID {
		return true
	}
	return sig.Request != "" && m.Request == sig.Request && (sig.ID == "" || m.ID == "")
}

// countUsage returns set with the ids of sig's reading added, at most
// MaxCounted: "m:<message id>" for a reading that names its message;
// "r:<request id>" for one that names its request and message,
// "r0:<request id>" for one that names its request only (a telemetry
// event), so that two messages of one request, each named, stay two, as
// MessageUsage.same has it.
func countUsage(set IDSet, sig events.Sig) IDSet {
	if sig.ID != "" {
		set = set.AddUpTo("m:"+sig.ID, MaxCounted)
		if sig.Request != "" {
			set = set.AddUpTo("r:"+sig.Request, MaxCounted)
		}
		return set
	}
	return set.AddUpTo("r0:"+sig.Request, MaxCounted)
}

// counted reports whether set holds a reading of sig's call: its message
// id, or its request id where one of the two names no message.
func counted(set IDSet, sig events.Sig) bool {
	if sig.ID != "" {
		return set.Has("m:"+sig.ID) || sig.Request != "" && set.Has("r0:"+sig.Request)
	}
	return sig.Request != "" && (set.Has("r0:"+sig.Request) || set.Has("r:"+sig.Request))
}

// Account returns obs, an observation about to be decided in s (and
// appended), with the evidence of its usage signals set
// (events.Sig.Counted): on each usage signal that names a message or a
// request and is not cumulative, events.CountedSeen when s's index
// (Counted) holds a reading of its call, else events.CountedNew; "" on
// every other signal. Deciders call it with the state the observation
// is decided in, folded from the log: Evolve then folds what is
// recorded, and replay counts as the decider did. obs is not modified
// (its signals are copied when one changes); an envelope that is not an
// observation is returned as it is.
func (s State) Account(obs events.Envelope) events.Envelope {
	o, ok := events.Observed(obs.Data)
	if !ok {
		return obs
	}
	var sigs []events.Sig
	for i, sig := range o.Signals {
		want := ""
		if sig.Kind == events.SigUsage && sig.Usage != nil && !sig.Usage.Cumulative && (sig.ID != "" || sig.Request != "") {
			want = events.CountedNew
			if counted(s.Counted, sig) {
				want = events.CountedSeen
			}
		}
		if sig.Counted == want {
			continue
		}
		if sigs == nil {
			sigs = slices.Clone(o.Signals)
		}
		sigs[i].Counted = want
	}
	if sigs == nil {
		return obs
	}
	c := *o
	c.Signals = sigs
	obs.Data, _ = events.WithObservation(obs.Data, c)
	return obs
}

// Evidence returns how the usage evidence of observation obs (Account)
// differs from what s's index gives today, naming the first signal that
// differs (`signals[2] (message "", request "req_1"): recorded "seen",
// today "new"`); ""
// when they agree or obs records none (an observation stored before the
// evidence was kept).
func (s State) Evidence(obs events.Envelope) string {
	o, ok := events.Observed(obs.Data)
	if !ok || !slices.ContainsFunc(o.Signals, func(g events.Sig) bool { return g.Counted != "" }) {
		return ""
	}
	today, _ := events.Observed(s.Account(obs).Data)
	for i, sig := range o.Signals {
		if got := today.Signals[i].Counted; got != sig.Counted {
			return fmt.Sprintf("signals[%d] (message %q, request %q): recorded %q, today %q", i, sig.ID, sig.Request, sig.Counted, got)
		}
	}
	return ""
}

// LimitReading is the latest reading of one plan-limit window and when it
// was measured.
type LimitReading struct {
	events.Limit
	MeasuredAt time.Time `json:"measured_at"`
}

// foldUsage counts the usage and rate-limit signals of an observation
// made at at into *s, a caller's own copy: slices it changes are
// replaced, never written. A reading whose message id was counted before counts
// only its growth, field by field (a reading names its call by message
// id or by API request id: a transcript line and a telemetry event of
// one call count once); one the decider found counted before
// (events.CountedSeen) that the recent readings no longer hold counts
// nothing; every reading counted adds its ids to s.Counted. A
// cumulative reading counts its growth
// over the session's last cumulative one (a total that went down, as after
// a restart, starts counting afresh).
func foldUsage(s *State, o *events.Observation, at time.Time) {
	for _, sig := range o.Signals {
		switch {
		case sig.Kind == events.SigUsage && sig.Usage != nil:
			u := *sig.Usage
			d := u
			switch {
			case u.Cumulative:
				if s.UsageTotal != nil && !below(u, *s.UsageTotal) {
					d = minus(u, *s.UsageTotal)
				}
				t := u
				s.UsageTotal = &t
			case sig.ID != "" || sig.Request != "":
				i := slices.IndexFunc(s.RecentMessages, func(m MessageUsage) bool { return m.same(sig) })
				if i < 0 && sig.Counted == events.CountedSeen {
					// Counted before, from this source or another,
					// longer ago than the recent readings reach: the
					// decider found it in the session's index.
					continue
				}
				if i < 0 {
					s.Counted = countUsage(s.Counted, sig)
				}
				if i >= 0 {
					prev := s.RecentMessages[i].Usage
					d = growth(u, prev)
					s.RecentMessages = slices.Clone(s.RecentMessages)
					s.RecentMessages[i].Usage = most(u, prev)
					s.RecentMessages[i].ID = cmp.Or(s.RecentMessages[i].ID, sig.ID)
					s.RecentMessages[i].Request = cmp.Or(s.RecentMessages[i].Request, sig.Request)
				} else {
					s.RecentMessages = append(slices.Clone(s.RecentMessages), MessageUsage{ID: sig.ID, Request: sig.Request, Usage: u})
					if len(s.RecentMessages) > RecentMessages {
						s.RecentMessages = s.RecentMessages[len(s.RecentMessages)-RecentMessages:]
					}
				}
				if i >= 0 && d.Total() == 0 {
					continue // a repeat of a message already counted
				}
			}
			model := u.Model
			if model == "" {
				model = s.Model
			}
			// A message seen before adds its growth, not a call.
			repeat := !u.Cumulative && (sig.ID != "" || sig.Request != "") && len(s.RecentMessages) > 0 && d != u
			above := int64(0)
			if !u.Cumulative {
				above = aboveOf(u.Input + u.CacheWrite + u.CacheRead)
			}
			if u.CopiedFrom != "" && !u.Cumulative {
				// Spent in the session it was copied from: kept
				// apart, out of this session's own spend.
				s.Copied = addCopied(s.Copied, u.CopiedFrom, model, d, !repeat)
			} else {
				s.Usage = addBucket(s.Usage, model, at.UTC().Truncate(time.Minute), u.ServiceTier, above, d, !repeat)
			}
			if rt := u.RunningTotal; rt != nil && (s.AgentTotal == nil || rt.Total() > s.AgentTotal.Total()) {
				t := *rt
				t.RunningTotal = nil
				s.AgentTotal = &t
			}
			if !u.Cumulative && (s.Context == nil || !at.Before(s.Context.At)) {
				s.Context = &ContextUse{Model: model, Tokens: u.Total(), At: at.UTC()}
			}
		case sig.Kind == events.SigRateLimit && sig.Limit != nil:
			l := LimitReading{Limit: *sig.Limit, MeasuredAt: at.UTC()}
			s.Limits = slices.Clone(s.Limits)
			i := slices.IndexFunc(s.Limits, func(r LimitReading) bool { return r.Account == l.Account && r.Window == l.Window })
			switch {
			case i < 0:
				s.Limits = append(s.Limits, l)
			case !l.MeasuredAt.Before(s.Limits[i].MeasuredAt):
				s.Limits[i] = l
			}
		}
	}
}

// addBucket returns bs with d added to the bucket of model, minute, tier
// and above, kept in (minute, model, tier, above) order so that the same
// readings give the same buckets in whatever order they were folded.
func addBucket(bs []UsageBucket, model string, minute time.Time, tier string, above int64, d events.Usage, call bool) []UsageBucket {
	bs = slices.Clone(bs)
	key := UsageBucket{Model: model, Minute: minute, Tier: tier, Above: above}
	i, found := slices.BinarySearchFunc(bs, key, cmpBucket)
	if !found {
		if len(bs) >= MaxUsageBuckets {
			i = lastIndex(bs, func(b UsageBucket) bool { return b.Model == model && b.Tier == tier && b.Above == above })
			if i < 0 {
				i = len(bs) - 1
			}
		} else {
			bs = slices.Insert(bs, i, key)
		}
	}
	b := &bs[i]
	b.Input += d.Input
	b.Output += d.Output
	b.CacheWrite += d.CacheWrite
	b.CacheWrite1h += d.CacheWrite1h
	b.CacheRead += d.CacheRead
	b.Reasoning += d.Reasoning
	if call {
		b.Calls++
	}
	return bs
}

// cmpBucket orders buckets by minute, model, tier and band.
func cmpBucket(a, b UsageBucket) int {
	if c := a.Minute.Compare(b.Minute); c != 0 {
		return c
	}
	if c := strings.Compare(a.Model, b.Model); c != 0 {
		return c
	}
	if c := strings.Compare(a.Tier, b.Tier); c != 0 {
		return c
	}
	return cmp.Compare(a.Above, b.Above)
}

func lastIndex(bs []UsageBucket, f func(UsageBucket) bool) int {
	for i := len(bs) - 1; i >= 0; i-- {
		if f(bs[i]) {
			return i
		}
	}
	return -1
}

// below reports whether any field of u is below t's.
func below(u, t events.Usage) bool {
	return u.Input < t.Input || u.Output < t.Output || u.CacheWrite < t.CacheWrite || u.CacheRead < t.CacheRead || u.Reasoning < t.Reasoning
}

func minus(u, t events.Usage) events.Usage {
	u.Input -= t.Input
	u.Output -= t.Output
	u.CacheWrite -= t.CacheWrite
	u.CacheRead -= t.CacheRead
	u.CacheWrite1h -= t.CacheWrite1h
	u.Reasoning -= t.Reasoning
	return u
}

// growth returns, field by field, how much u exceeds prev (never below 0).
func growth(u, prev events.Usage) events.Usage {
	g := func(a, b int64) int64 { return max(a-b, 0) }
	u.Input, u.Output = g(u.Input, prev.Input), g(u.Output, prev.Output)
	u.CacheWrite, u.CacheRead = g(u.CacheWrite, prev.CacheWrite), g(u.CacheRead, prev.CacheRead)
	u.CacheWrite1h = min(g(u.CacheWrite1h, prev.CacheWrite1h), u.CacheWrite)
	u.Reasoning = g(u.Reasoning, prev.Reasoning)
	return u
}

// most returns the larger of u and prev, field by field.
func most(u, prev events.Usage) events.Usage {
	u.Input, u.Output = max(u.Input, prev.Input), max(u.Output, prev.Output)
	u.CacheWrite, u.CacheRead = max(u.CacheWrite, prev.CacheWrite), max(u.CacheRead, prev.CacheRead)
	u.CacheWrite1h = max(u.CacheWrite1h, prev.CacheWrite1h)
	u.Reasoning = max(u.Reasoning, prev.Reasoning)
	return u
}
