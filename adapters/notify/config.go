package notify

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/net/http/httpguts"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
)

// typeFault matches go-toml's (v2) error for a value of the wrong type,
// "cannot decode TOML string into struct field notify.ruleDoc.After of
// type int64": the TOML type, then the Go type, which keyAt and wantOf
// turn into the file's own words.
var typeFault = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`cannot decode TOML (\w+) into (?:struct field \S+ of type |a Go value of type )(\S+)`)
})

// wantOf says what a value of Go type t is, in the file's words.
func wantOf(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "*int"):
		return "a whole number"
	case strings.HasPrefix(t, "float"), strings.HasPrefix(t, "*float"):
		return "a number"
	case t == "bool" || t == "*bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a table"
	}
	return "another type"
}

// keyAt names the key a decode error is about: key when go-toml gives
// it, else the key written on line l (1-based) of text, else "a value".
func keyAt(text []byte, l int, key []string) string {
	if len(key) > 0 {
		return strings.Join(key, ".")
	}
	lines := strings.Split(string(text), "\n")
	if l >= 1 && l <= len(lines) {
		if k, _, ok := strings.Cut(lines[l-1], "="); ok && strings.TrimSpace(k) != "" {
			return strings.TrimSpace(k)
		}
	}
	return "a value"
}

// File is the notifications' config file in the data dir.
const File = "notify.toml"

// MaxFile is the largest notify.toml read, in bytes.
const MaxFile = 1 << 20

// Rule kinds: what a rule's `on` names.
const (
	// OnWaiting fires when a session moved to phase waiting (a question,
	// a permission dialog, a plan to approve) and is still in that same
	// wait After later.
	OnWaiting = "waiting"
	// OnReviewPending fires when a review was requested and is still
	// undecided After later.
	OnReviewPending = "review_pending"
	// OnBreakerTripped fires when too many refusals tripped a session's
	// review breaker.
	OnBreakerTripped = "breaker_tripped"
	// OnAbandoned fires when the reconciler found a session's agent gone
	// (session.ended agent_gone) or marked its entries stale: once per
	// reconciler decision, however many entries it marked.
	OnAbandoned = "abandoned"
	// OnCommandFailed fires when a command run through Logbook exited
	// with a status other than 0 (or was killed by a signal) and no stop
	// was asked for.
	OnCommandFailed = "command_failed"
	// OnSpend fires when a session's cost, priced as `logbook usage`
	// prices it, has reached USD at the end of one of its turns: once per
	// session.
	OnSpend = "spend"
)

// Kinds lists every rule kind, in the order the README explains them.
var Kinds = []string{OnWaiting, OnReviewPending, OnBreakerTripped, OnAbandoned, OnCommandFailed, OnSpend}

// Sink types: what a sink's `type` names.
const (
	// SinkDesktop shows a notification on the desktop of the user serve
	// runs as: org.freedesktop.Notifications on the D-Bus session bus.
	SinkDesktop = "desktop"
	// SinkWebhook POSTs to a URL, in Format.
	SinkWebhook = "webhook"
	// SinkBoard tells the browsers that have the board open: the board's
	// live stream carries notification.sent, which the board shows with
	// the browser's Notification API once permission is granted.
	SinkBoard = "board"
)

// Webhook formats.
const (
	FormatJSON  = "json"  // Logbook's own JSON object (Payload)
	FormatSlack = "slack" // a Slack incoming webhook's {"text": …}
	FormatNtfy  = "ntfy"  // ntfy: the message as the body, the title in a header
)

// Config is one notify.toml: rules and the sinks they name.
type Config struct {
	Rules []Rule // in file order
	// Sinks by name; every name a rule lists is here.
	Sinks map[string]Sink
}

// Rule is one [[rule]] of notify.toml.
type Rule struct {
	// Name is the rule's name, unique in the file (`name`; default: On);
	// [a-z0-9_-], 1..40 bytes. It is recorded in notification.sent and
	// goes into the idempotency key.
	Name string
	On   string // one of Kinds
	// After is how long the condition must hold before the rule fires
	// (`after`, whole seconds ≥ 0): for waiting (default 60 s) and
	// review_pending (default 5 s) only.
	After time.Duration
	// USD is a spend rule's threshold (`usd`, dollars > 0); 0 for any
	// other kind.
	USD float64
	// Sinks are the names of the sinks told, each once, in order.
	Sinks []string
	// Line is where the rule's [[rule]] header is in the file (1-based).
	Line int
}

// Sink is one [sinks.NAME] table of notify.toml.
type Sink struct {
	Name string // the table's name, [a-z0-9_-], 1..40 bytes
	Type string // SinkDesktop, SinkWebhook or SinkBoard
	// URL is a webhook's http or https URL.
	URL string
	// Format is a webhook's body: FormatJSON (default), FormatSlack or
	// FormatNtfy.
	Format string
	// Headers are extra HTTP headers a webhook sends (e.g.
	// Authorization).
	Headers map[string]string
	// Timeout bounds one delivery (`timeout`, whole seconds 1..60;
	// default 10 s).
	Timeout time.Duration
	// Address is a desktop sink's D-Bus session bus address; "" uses
	// DBUS_SESSION_BUS_ADDRESS as serve found it.
	Address string
}

// DefaultTimeout is a sink's Timeout when notify.toml names none.
const DefaultTimeout = 10 * time.Second

// DefaultReviewAfter is a review_pending rule's After when notify.toml
// names none: time for the gate's rules or a reviewer program to decide.
const DefaultReviewAfter = 5 * time.Second

// DefaultWaitingAfter is a waiting rule's After when notify.toml names
// none.
const DefaultWaitingAfter = 60 * time.Second

// ConfigError is a fault in notify.toml: the file, the line and column
// (1-based; 0 when unknown) and what is wrong.
type ConfigError struct {
	Path         string
	Line, Column int
	Msg          string
}

func (e *ConfigError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// fileDoc is notify.toml as TOML; unknown keys are refused.
type fileDoc struct {
	Sinks map[string]sinkDoc `toml:"sinks"`
	Rule  []ruleDoc          `toml:"rule"`
}

type sinkDoc struct {
	Type    string            `toml:"type"`
	URL     string            `toml:"url"`
	Format  string            `toml:"format"`
	Headers map[string]string `toml:"headers"`
	Timeout *int64            `toml:"timeout"`
	Address string            `toml:"address"`
}

type ruleDoc struct {
	Name  string   `toml:"name"`
	On    string   `toml:"on"`
	After *int64   `toml:"after"`
	USD   *float64 `toml:"usd"`
	Sinks []string `toml:"sinks"`
}

// utf8BOM is the UTF-8 byte order mark, which TOML (v1.0.0) does not
// allow and go-toml refuses as "invalid character … U+00EF": Parse says
// what it is instead (bomFault).
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

const bomFault = "not valid TOML: the file starts with a UTF-8 byte order mark (EF BB BF), which TOML does not allow; save it without one"

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_-]{1,40}$`) })

// Parse reads notify.toml's text (path names it in errors). A fault is a
// *ConfigError with the line and column of the offending key where it
// can be found: TOML syntax, a key notify.toml does not have, a value of
// the wrong type, an unknown rule kind or sink type, a rule naming no
// sink or a sink not defined, a bad URL or format, a repeated rule name.
// An empty file is a config with no rules.
func Parse(path string, text []byte) (Config, error) {
	var doc fileDoc
	if bytes.HasPrefix(text, utf8BOM) {
		return Config{}, &ConfigError{Path: path, Line: 1, Column: 1, Msg: bomFault}
	}
	d := toml.NewDecoder(bytes.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(&doc); err != nil {
		var de *toml.DecodeError
		var se *toml.StrictMissingError
		switch {
		case errors.As(err, &se) && len(se.Errors) > 0:
			e := se.Errors[0]
			l, c := e.Position()
			return Config{}, &ConfigError{Path: path, Line: l, Column: c, Msg: fmt.Sprintf("unknown key %s: want %s", strings.Join(e.Key(), "."), knownKeys(e.Key()))}
		case errors.As(err, &de):
			l, c := de.Position()
			if m := typeFault().FindStringSubmatch(de.Error()); m != nil {
				return Config{}, &ConfigError{Path: path, Line: l, Column: c, Msg: fmt.Sprintf("%s: want %s, not a %s", keyAt(text, l, de.Key()), wantOf(m[2]), m[1])}
			}
			return Config{}, &ConfigError{Path: path, Line: l, Column: c, Msg: "not valid TOML: " + strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return Config{}, &ConfigError{Path: path, Msg: "not valid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}
	}
	lines := strings.Split(string(text), "\n")
	cfg := Config{Sinks: map[string]Sink{}}
	names := make([]string, 0, len(doc.Sinks))
	for n := range doc.Sinks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sd := doc.Sinks[n]
		hl, hc := headerOf(lines, "[sinks."+n+"]", 0)
		fault := func(key, format string, a ...any) error {
			l, c := keyIn(lines, hl, key)
			if l == 0 {
				l, c = hl, hc
			}
			return &ConfigError{Path: path, Line: l, Column: c, Msg: fmt.Sprintf("sink %s: ", n) + fmt.Sprintf(format, a...)}
		}
		if !nameRE().MatchString(n) {
			return Config{}, fault("", "want a name of 1..40 bytes of a-z, 0-9, _ and -")
		}
		s := Sink{Name: n, Type: sd.Type, URL: sd.URL, Format: sd.Format, Headers: sd.Headers, Address: sd.Address, Timeout: DefaultTimeout}
		if sd.Timeout != nil {
			if *sd.Timeout < 1 || *sd.Timeout > 60 {
				return Config{}, fault("timeout", "timeout %d: want whole seconds from 1 to 60", *sd.Timeout)
			}
			s.Timeout = time.Duration(*sd.Timeout) * time.Second
		}
		switch sd.Type {
		case SinkWebhook:
			u, err := url.Parse(sd.URL)
			if sd.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return Config{}, fault("url", "url %q: want an http or https URL", sd.URL)
			}
			switch sd.Format {
			case "":
				s.Format = FormatJSON
			case FormatJSON, FormatSlack, FormatNtfy:
			default:
				return Config{}, fault("format", "format %q: want json, slack or ntfy", sd.Format)
			}
			if sd.Address != "" {
				return Config{}, fault("address", "address is a desktop sink's; a webhook has url")
			}
			for _, k := range slices.Sorted(maps.Keys(sd.Headers)) {
				if !httpguts.ValidHeaderFieldName(k) {
					return Config{}, fault("headers", "headers: %q is not an HTTP header name (RFC 9110: letters, digits and !#$%%&'*+-.^_`|~, no space)", k)
				}
				if !httpguts.ValidHeaderFieldValue(sd.Headers[k]) {
					return Config{}, fault("headers", "headers: the value of %s holds a control character (a line break would start another header)", k)
				}
			}
		case SinkDesktop, SinkBoard:
			for key, set := range map[string]bool{"url": sd.URL != "", "format": sd.Format != "", "headers": len(sd.Headers) > 0} {
				if set {
					return Config{}, fault(key, "%s is a webhook's; a %s sink has none", key, sd.Type)
				}
			}
			if sd.Type == SinkBoard && sd.Address != "" {
				return Config{}, fault("address", "address is a desktop sink's")
			}
		case "":
			return Config{}, fault("type", "type missing: want desktop, webhook or board")
		default:
			return Config{}, fault("type", "type %q: want desktop, webhook or board", sd.Type)
		}
		cfg.Sinks[n] = s
	}
	seen := map[string]bool{}
	for i, rd := range doc.Rule {
		hl, hc := headerOf(lines, "[[rule]]", i)
		fault := func(key, format string, a ...any) error {
			l, c := keyIn(lines, hl, key)
			if l == 0 {
				l, c = hl, hc
			}
			return &ConfigError{Path: path, Line: l, Column: c, Msg: fmt.Sprintf("rule %d: ", i+1) + fmt.Sprintf(format, a...)}
		}
		r := Rule{Name: rd.Name, On: rd.On, Sinks: rd.Sinks, Line: hl}
		if !slices.Contains(Kinds, rd.On) {
			if rd.On == "" {
				return Config{}, fault("on", "on missing: want one of %s", strings.Join(Kinds, ", "))
			}
			return Config{}, fault("on", "on %q: want one of %s", rd.On, strings.Join(Kinds, ", "))
		}
		if r.Name == "" {
			r.Name = rd.On
		}
		if !nameRE().MatchString(r.Name) {
			return Config{}, fault("name", "name %q: want 1..40 bytes of a-z, 0-9, _ and -", r.Name)
		}
		if seen[r.Name] {
			return Config{}, fault("name", "name %q is taken by an earlier rule: give each rule of the same kind a name", r.Name)
		}
		seen[r.Name] = true
		switch {
		case rd.After != nil && rd.On != OnWaiting && rd.On != OnReviewPending:
			return Config{}, fault("after", "after: only a waiting or review_pending rule waits")
		case rd.After != nil && (*rd.After < 0 || *rd.After > 7*24*3600):
			return Config{}, fault("after", "after %d: want whole seconds from 0 to 604800 (a week)", *rd.After)
		case rd.After != nil:
			r.After = time.Duration(*rd.After) * time.Second
		case rd.On == OnWaiting:
			r.After = DefaultWaitingAfter
		case rd.On == OnReviewPending:
			r.After = DefaultReviewAfter
		}
		switch {
		case rd.On == OnSpend && rd.USD == nil:
			return Config{}, fault("on", "a spend rule needs usd, the dollars a session's cost must reach, such as usd = 5")
		case rd.USD != nil && rd.On != OnSpend:
			return Config{}, fault("usd", "usd: only a spend rule has a threshold")
		case rd.USD != nil && !(*rd.USD > 0 && *rd.USD < 1e9):
			return Config{}, fault("usd", "usd %v: want dollars above 0", *rd.USD)
		case rd.USD != nil:
			r.USD = *rd.USD
		}
		if rd.Sinks != nil && len(rd.Sinks) == 0 {
			return Config{}, fault("sinks", "sinks is empty: name at least one sink, such as [\"desk\"], each a [sinks.NAME] table")
		}
		if len(rd.Sinks) == 0 {
			return Config{}, fault("sinks", "sinks missing: want the names of sinks such as [\"desk\"], each a [sinks.NAME] table")
		}
		for j, s := range rd.Sinks {
			if _, ok := cfg.Sinks[s]; !ok {
				return Config{}, fault("sinks", "sinks: %q (entry %d) is not a [sinks.%s] table of this file", s, j+1, s)
			}
			if slices.Index(rd.Sinks, s) != j {
				return Config{}, fault("sinks", "sinks: %q is named twice", s)
			}
		}
		cfg.Rules = append(cfg.Rules, r)
	}
	return cfg, nil
}

// knownKeys names the keys allowed where the unknown key path is.
func knownKeys(path []string) string {
	switch {
	case len(path) >= 3 && path[0] == "sinks":
		return "type, url, format, headers, timeout or address"
	case len(path) >= 2 && path[0] == "rule":
		return "name, on, after, usd or sinks"
	}
	return "[sinks.NAME] tables and [[rule]] entries"
}

// headerOf returns the line and column (1-based) of the nth (0-based)
// line that is header, or 0, 0.
func headerOf(lines []string, header string, nth int) (int, int) {
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, header) {
			if nth == 0 {
				return i + 1, strings.Index(l, header) + 1
			}
			nth--
		}
	}
	return 0, 0
}

// keyIn returns the line and column of key = … in the table whose header
// is on line hl (1-based), or 0, 0.
func keyIn(lines []string, hl int, key string) (int, int) {
	if hl == 0 || key == "" {
		return 0, 0
	}
	for i := hl; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if strings.HasPrefix(t, "[") {
			break
		}
		if k, _, ok := strings.Cut(t, "="); ok && strings.TrimSpace(k) == key {
			return i + 1, strings.Index(lines[i], key) + 1
		}
	}
	return 0, 0
}

// Load reads and parses the file at path. It returns ok false, no error,
// when there is no file. Its errors are Parse's and a *ConfigError for a
// file that cannot be read, is over MaxFile, or is not a regular file
// (a FIFO, a device, a directory: refused without opening it for a read
// that could block, as hookspool.ReadRegular reads).
func Load(path string) (cfg Config, ok bool, err error) {
	b, err := hookspool.ReadRegular(path, MaxFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Config{}, false, nil
	case errors.Is(err, hookspool.ErrFileTooLarge):
		return Config{}, true, &ConfigError{Path: path, Msg: fmt.Sprintf("over %d bytes", MaxFile)}
	case err != nil:
		return Config{}, true, &ConfigError{Path: path, Msg: strings.TrimPrefix(err.Error(), path+": ")}
	}
	cfg, err = Parse(path, b)
	return cfg, true, err
}

// Summary describes cfg in one line for serve's first lines: each rule
// with its wait and sinks, each sink with its type.
func (cfg Config) Summary() string {
	if len(cfg.Rules) == 0 {
		return "no rules"
	}
	var rules []string
	for _, r := range cfg.Rules {
		s := r.Name
		if r.Name != r.On {
			s += " (" + r.On + ")"
		}
		if r.After > 0 {
			s += fmt.Sprintf(" after %s", r.After)
		}
		if r.On == OnSpend {
			s += " at $" + Dollars(r.USD)
		}
		rules = append(rules, s+" → "+strings.Join(r.Sinks, ", "))
	}
	var sinks []string
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range cfg.Sinks {
			if !yield(n) {
				return
			}
		}
	}) {
		s := cfg.Sinks[n]
		t := s.Type
		if s.Type == SinkWebhook {
			t += " " + s.Format
		}
		sinks = append(sinks, n+" ("+t+")")
	}
	return "rules " + strings.Join(rules, "; ") + "; sinks " + strings.Join(sinks, ", ")
}

// Watch holds the last good notify.toml of a data dir and reloads it
// when the file changes (size or modification time), keeping the last
// good config while the file does not parse. Safe for concurrent use.
type Watch struct {
	Path string
	// Say receives what is said of the file (format, args): a fault
	// ("ERROR: " first), a fix, the config taken ("INFO: " first: the
	// level markers of serve's log, adapters/servelog), a removal.
	Say func(format string, args ...any)

	// Undeliverable, when set, says why a sink cannot deliver ("" when
	// it can, as Undeliverable does): each good config taken names at
	// WARN every sink it gives a reason for; the file is taken all the
	// same.
	Undeliverable func(Sink) string

	mu    sync.Mutex
	stamp string
	good  *Config // nil: no good config yet (or the file is gone)
	fault string
}

// Check reads the file if it changed since the last call, and returns
// the config in force (nil: none, no file or never a good one) and
// whether it changed.
func (w *Watch) Check() (*Config, bool) {
	fi, err := os.Stat(w.Path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, os.ErrNotExist) {
		if w.stamp == "" {
			return w.good, false
		}
		w.stamp, w.fault = "", ""
		w.good = nil
		w.Say("%s removed: notifications off", w.Path)
		return nil, true
	}
	stamp := "?"
	if err == nil {
		stamp = fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
	}
	if stamp == w.stamp {
		return w.good, false
	}
	w.stamp = stamp
	cfg, _, err := Load(w.Path)
	if err != nil {
		if err.Error() != w.fault {
			w.fault = err.Error()
			if w.good != nil {
				w.Say("ERROR: %v; keeping the last good notifications config", err)
			} else {
				w.Say("ERROR: %v; notifications off until it parses", err)
			}
		}
		return w.good, false
	}
	w.fault = ""
	w.good = &cfg
	w.Say("INFO: notifications: %s (%s)", cfg.Summary(), w.Path)
	if w.Undeliverable != nil {
		for _, n := range slices.Sorted(maps.Keys(cfg.Sinks)) {
			s := cfg.Sinks[n]
			if why := w.Undeliverable(s); why != "" {
				w.Say("WARN: notifications: sink %s (%s) cannot deliver: %s", s.Name, s.Type, why)
			}
		}
	}
	return w.good, true
}

// Current returns the config in force without reading the file (nil:
// none).
func (w *Watch) Current() *Config {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.good
}
