package redact

import (
	"fmt"
	"math"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"

	toml "github.com/pelletier/go-toml/v2"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// gitleaksModule is the module whose config/gitleaks.toml supplies the
// rule set.
const gitleaksModule = "github.com/zricethezav/gitleaks/v8"

// GitleaksVersion returns the version of the gitleaks module built in
// (e.g. "v8.30.1"), or "" when the build does not record it (tests).
func GitleaksVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == gitleaksModule {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

// glAllowlist is one allowlist of gitleaks' config format (v8.25+).
type glAllowlist struct {
	Condition   string   `toml:"condition"`   // "OR" (default) or "AND"
	RegexTarget string   `toml:"regexTarget"` // "secret" (default), "match" or "line"
	Regexes     []string `toml:"regexes"`
	Stopwords   []string `toml:"stopwords"`
	Paths       []string `toml:"paths"`
	Commits     []string `toml:"commits"`
}

// glConfig is the part of gitleaks' config format that applies to text.
type glConfig struct {
	Allowlist  *glAllowlist  `toml:"allowlist"`
	Allowlists []glAllowlist `toml:"allowlists"`
	Rules      []struct {
		ID          string        `toml:"id"`
		Regex       string        `toml:"regex"`
		Path        string        `toml:"path"`
		SecretGroup int           `toml:"secretGroup"`
		Entropy     float64       `toml:"entropy"`
		Keywords    []string      `toml:"keywords"`
		Allowlist   *glAllowlist  `toml:"allowlist"`
		Allowlists  []glAllowlist `toml:"allowlists"`
		Required    []struct{}    `toml:"required"`
		SkipReport  bool          `toml:"skipReport"`
	} `toml:"rules"`
}

// allowlist is a compiled-on-demand gitleaks allowlist.
type allowlist struct {
	and       bool
	target    string // "secret", "match" or "line"
	patterns  []string
	stopwords []string
	// never is true when the list needs a path or commit to match (AND
	// with paths or commits): text has neither, so it never applies.
	never bool

	once sync.Once
	res  []*regexp.Regexp
}

func newAllowlist(a glAllowlist) *allowlist {
	al := &allowlist{
		and:       strings.EqualFold(a.Condition, "AND"),
		target:    strings.ToLower(a.RegexTarget),
		patterns:  a.Regexes,
		stopwords: a.Stopwords,
	}
	if al.target == "" {
		al.target = "secret"
	}
	if al.and && (len(a.Paths) > 0 || len(a.Commits) > 0) {
		al.never = true
	}
	return al
}

// regexps compiles the list's regexes on first use; one that does not
// compile is left out.
func (al *allowlist) regexps() []*regexp.Regexp {
	al.once.Do(func() {
		for _, p := range al.patterns {
			if re, err := regexp.Compile(p); err == nil {
				al.res = append(al.res, re)
			}
		}
	})
	return al.res
}

// allows reports whether the list lets secret (found in match, on line)
// pass as no secret, by gitleaks' rules: a regex matching the target, or
// the lower-cased secret containing a stopword; with condition AND, every
// kind the list has must hit.
func (al *allowlist) allows(secret, match, line string) bool {
	if al.never || len(al.patterns) == 0 && len(al.stopwords) == 0 {
		return false
	}
	target := secret
	switch al.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	reHit := false
	for _, re := range al.regexps() {
		if re.MatchString(target) {
			reHit = true
			break
		}
	}
	swHit := false
	if len(al.stopwords) > 0 {
		low := strings.ToLower(secret)
		for _, w := range al.stopwords {
			if strings.Contains(low, w) {
				swHit = true
				break
			}
		}
	}
	if al.and {
		return (len(al.patterns) == 0 || reHit) && (len(al.stopwords) == 0 || swHit)
	}
	return reHit || swHit
}

// allowed reports whether a match m (submatch indexes into s) whose
// secret is s[from:to] is let pass by one of the rule's allowlists.
func (ru *rule) allowed(s string, m []int, from, to int) bool {
	if len(ru.allow) == 0 {
		return false
	}
	ls := strings.LastIndexByte(s[:m[0]], '\n') + 1
	le := strings.IndexByte(s[m[1]:], '\n')
	if le < 0 {
		le = len(s)
	} else {
		le += m[1]
	}
	for _, al := range ru.allow {
		if al.allows(s[from:to], s[m[0]:m[1]], s[ls:le]) {
			return true
		}
	}
	return false
}

// entropy returns the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// gitleaksRules parses gitleaks' default config into rules. Rules that
// need a file path, or other rules nearby (required), and auxiliary rules
// (skipReport) are left out: they do not apply to a lone text.
func gitleaksRules() []*rule {
	rules, err := parseGitleaks(gitleaks.DefaultConfig)
	if err != nil {
		// The config is part of the build: a parse error is a build bug,
		// caught by the package's tests.
		panic(err)
	}
	return rules
}

// glEnd is how most gitleaks rules end a secret: a quote, space or ';',
// an escaped newline, or the end of the text. glEndWide also ends it at
// the delimiters of a URL query, an argument list or markup ("&", ",",
// ")", "]", "}", "<", ">"), where tokens in command output and tool
// results often sit.
const (
	glEnd     = `(?:[\x60'"\s;]|\\[nr]|$)`
	glEndWide = `(?:[\x60'"\s;&,)\]}<>]|\\[nr]|$)`
)

// parseGitleaks parses a gitleaks config (TOML, format of v8.25+).
func parseGitleaks(src string) ([]*rule, error) {
	var c glConfig
	if err := toml.Unmarshal([]byte(src), &c); err != nil {
		return nil, fmt.Errorf("gitleaks config: %w", err)
	}
	var global []*allowlist
	if c.Allowlist != nil {
		global = append(global, newAllowlist(*c.Allowlist))
	}
	for _, a := range c.Allowlists {
		global = append(global, newAllowlist(a))
	}
	var out []*rule
	for _, r := range c.Rules {
		if r.Regex == "" || r.Path != "" || len(r.Required) > 0 || r.SkipReport {
			continue
		}
		ru := &rule{name: r.ID, pattern: strings.ReplaceAll(r.Regex, glEnd, glEndWide), group: r.SecretGroup, entropy: r.Entropy, fold: true}
		if ru.group == 0 {
			ru.group = -1
		}
		for _, k := range r.Keywords {
			ru.hints = append(ru.hints, strings.ToLower(k))
		}
		if r.Allowlist != nil {
			ru.allow = append(ru.allow, newAllowlist(*r.Allowlist))
		}
		for _, a := range r.Allowlists {
			ru.allow = append(ru.allow, newAllowlist(a))
		}
		ru.allow = append(ru.allow, global...)
		out = append(out, ru)
	}
	return out, nil
}
