package session

import (
	"slices"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Bounds on what a State keeps of its usage.
const (
	// RecentMessages is how many message ids a State remembers with what
	// was counted for them, so a message whose usage an agent writes on
	// several lines counts once.
	RecentMessages = 64
	// MaxUsageBuckets bounds a session's usage buckets (one per model and
	// hour); past it, new hours fold into the last bucket of their model.
	MaxUsageBuckets = 2000
)

// UsageBucket is what a session spent with one model in one UTC hour, in
// tokens. The usage view groups buckets by session, model, project and
// day; hours let a day be cut in any time zone.
type UsageBucket struct {
	Model      string    `json:"model"` // "" when the agent did not name it
	Hour       time.Time `json:"hour"`  // UTC, truncated to the hour
	Input      int64     `json:"input,omitempty"`
	Output     int64     `json:"output,omitempty"`
	CacheWrite int64     `json:"cache_write,omitempty"`
	CacheRead  int64     `json:"cache_read,omitempty"`
	Reasoning  int64     `json:"reasoning,omitempty"`
	Calls      int64     `json:"calls,omitempty"` // usage readings counted
}

// Tokens returns the bucket's input, output and cache tokens summed.
func (b UsageBucket) Tokens() int64 { return b.Input + b.Output + b.CacheWrite + b.CacheRead }

// MessageUsage is what was counted for one message id.
type MessageUsage struct {
	ID    string       `json:"id"`
	Usage events.Usage `json:"usage"`
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
// only its growth, field by field; a cumulative reading counts its growth
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
			case sig.ID != "":
				i := slices.IndexFunc(s.RecentMessages, func(m MessageUsage) bool { return m.ID == sig.ID })
				if i >= 0 {
					prev := s.RecentMessages[i].Usage
					d = growth(u, prev)
					s.RecentMessages = slices.Clone(s.RecentMessages)
					s.RecentMessages[i].Usage = most(u, prev)
				} else {
					s.RecentMessages = append(slices.Clone(s.RecentMessages), MessageUsage{ID: sig.ID, Usage: u})
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
			repeat := !u.Cumulative && sig.ID != "" && len(s.RecentMessages) > 0 && d != u
			s.Usage = addBucket(s.Usage, model, at.UTC().Truncate(time.Hour), d, !repeat)
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

func addBucket(bs []UsageBucket, model string, hour time.Time, d events.Usage, call bool) []UsageBucket {
	bs = slices.Clone(bs)
	i := slices.IndexFunc(bs, func(b UsageBucket) bool { return b.Model == model && b.Hour.Equal(hour) })
	if i < 0 {
		if len(bs) >= MaxUsageBuckets {
			i = slices.IndexFunc(bs, func(b UsageBucket) bool { return b.Model == model })
			if i < 0 {
				i = len(bs) - 1
			}
		} else {
			bs = append(bs, UsageBucket{Model: model, Hour: hour})
			i = len(bs) - 1
		}
	}
	b := &bs[i]
	b.Input += d.Input
	b.Output += d.Output
	b.CacheWrite += d.CacheWrite
	b.CacheRead += d.CacheRead
	b.Reasoning += d.Reasoning
	if call {
		b.Calls++
	}
	return bs
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
	u.Reasoning -= t.Reasoning
	return u
}

// growth returns, field by field, how much u exceeds prev (never below 0).
func growth(u, prev events.Usage) events.Usage {
	g := func(a, b int64) int64 { return max(a-b, 0) }
	u.Input, u.Output = g(u.Input, prev.Input), g(u.Output, prev.Output)
	u.CacheWrite, u.CacheRead = g(u.CacheWrite, prev.CacheWrite), g(u.CacheRead, prev.CacheRead)
	u.Reasoning = g(u.Reasoning, prev.Reasoning)
	return u
}

// most returns the larger of u and prev, field by field.
func most(u, prev events.Usage) events.Usage {
	u.Input, u.Output = max(u.Input, prev.Input), max(u.Output, prev.Output)
	u.CacheWrite, u.CacheRead = max(u.CacheWrite, prev.CacheWrite), max(u.CacheRead, prev.CacheRead)
	u.Reasoning = max(u.Reasoning, prev.Reasoning)
	return u
}
