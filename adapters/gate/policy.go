// Package gate decides whether an agent's tool call may run: by the
// rules of a policy file, by a reviewer program, or by a person, and
// answers the agent in its own contract. Verdicts are decided on the
// session aggregate (reducers/session RequestReview and DecideReview)
// and re-derived by reducers/review, so what an answer says never
// bends the rules.
package gate

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/logbook-dev/logbook/adapters/claude/hookspool"
	"github.com/logbook-dev/logbook/adapters/gate/shell"
	"github.com/logbook-dev/logbook/reducers/review"
)

// Rule actions: what a matching pattern decides.
const (
	ActionAllow  = "allow"
	ActionDeny   = "deny"
	ActionReview = "review"
)

// MaxPolicyFile is the most bytes a policy file may hold: 1 MiB. A
// larger one, or one that is not a regular file, does not parse.
const MaxPolicyFile = 1 << 20

// PolicyFile is the name of a policy file: in the data dir, and in a
// project's ProjectPolicyDir.
const (
	PolicyFile       = "policy.toml"
	ProjectPolicyDir = ".logbook"
)

// policyDoc is the TOML form of a policy file (TOML 1.0):
//
//	allow  = ["Bash(git status)", "Bash(git diff:*)", "Read", "Edit(src/**)"]
//	deny   = ["Bash(rm -rf:*)", "Bash(sudo:*)"]
//	review = ["Bash(git push:*)", "mcp__*"]
//	require_check = ["Bash(git push:*)"]
//
//	[risk]
//	"Bash(git push:*)" = "high"
//	"Bash(rm -rf:*)" = "critical"
type policyDoc struct {
	Allow        []string          `toml:"allow"`
	Deny         []string          `toml:"deny"`
	Review       []string          `toml:"review"`
	RequireCheck []string          `toml:"require_check"`
	Risk         map[string]string `toml:"risk"`
	// ProjectAllows, in the data dir's file, puts projects' allow rules
	// in force (see Policies.For); in a project's file it means nothing.
	ProjectAllows bool `toml:"project_allows"`
}

// Policy is one parsed policy file: patterns by action and risk classes
// by pattern. A zero Policy matches nothing.
type Policy struct {
	Path string // where it was read from, "" for built-in rules
	// Warnings are the patterns that parse but read otherwise than they
	// seem to (patternWarning), each naming its line and column: the
	// policy is used as written, and `policy check` shows them.
	Warnings []*PolicyError
	allow    []Pattern
	deny     []Pattern
	review   []Pattern
	// requireCheck are the calls that need a passed check run of the
	// tree they act on (see RequireCheck).
	requireCheck []Pattern
	risk         []riskRule
	// guard, in the built-in rules only, sends a call that may change
	// the policy files to review at critical risk, or Claude Code's
	// settings at high risk (see guard).
	guard func(Call) (pattern, risk string)
	// projectAllows is the file's project_allows: in the data dir's
	// file, whether a project's allow rules are in force.
	projectAllows bool
	// allowsOff marks a project's policy whose allow rules were taken
	// out (withoutAllow), for serve's log.
	allowsOff bool
}

// hasAllow reports whether p holds allow rules.
func (p *Policy) hasAllow() bool { return len(p.allow) > 0 }

// withoutAllow returns a copy of p that holds none of its allow rules:
// a project's policy while the data dir's does not set project_allows.
func (p *Policy) withoutAllow() *Policy {
	q := *p
	q.allow, q.allowsOff = nil, true
	return &q
}

type riskRule struct {
	p    Pattern
	risk string
}

// PolicyError is a policy file that cannot be used, with the place of
// the fault: Line and Column are 1-based (0 when unknown).
type PolicyError struct {
	Path         string
	Line, Column int
	Msg          string
}

func (e *PolicyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("policy %s:%d:%d: %s", e.Path, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("policy %s: %s", e.Path, e.Msg)
}

// ParsePolicy parses the TOML text of policy file path. Errors are
// *PolicyError naming the line and column: TOML syntax, an unknown key,
// a pattern that does not parse, a risk class outside low, medium, high,
// critical.
func ParsePolicy(path string, text []byte) (*Policy, error) {
	doc, err := decodePolicy(path, text)
	if err != nil {
		return nil, err
	}
	p := &Policy{Path: path, projectAllows: doc.ProjectAllows}
	bad := func(pat string, err error) error {
		l, c := locate(text, pat)
		return &PolicyError{Path: path, Line: l, Column: c, Msg: fmt.Sprintf("pattern %q: %v", pat, err)}
	}
	for _, set := range []struct {
		in  []string
		out *[]Pattern
	}{{doc.Allow, &p.allow}, {doc.Deny, &p.deny}, {doc.Review, &p.review}, {doc.RequireCheck, &p.requireCheck}} {
		for _, s := range set.in {
			pt, err := ParsePattern(s)
			if err != nil {
				return nil, bad(s, err)
			}
			w := patternWarning(pt)
			if set.out == &p.allow && w == "" {
				w = allowAllWarning(pt)
			}
			if w != "" {
				l, c := locate(text, s)
				p.Warnings = append(p.Warnings, &PolicyError{Path: path, Line: l, Column: c, Msg: fmt.Sprintf("pattern %q: %s", s, w)})
			}
			*set.out = append(*set.out, pt)
		}
	}
	for s, r := range doc.Risk {
		pt, err := ParsePattern(s)
		if err != nil {
			return nil, bad(s, err)
		}
		if _, ok := review.RiskRank(r); !ok {
			return nil, bad(s, fmt.Errorf("risk %q: want low, medium, high or critical", r))
		}
		p.risk = append(p.risk, riskRule{pt, r})
	}
	// Map order is random: keep the risk rules in file order.
	sortByPlace(text, p.risk)
	slices.SortStableFunc(p.Warnings, func(a, b *PolicyError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return p, nil
}

// utf8BOM is the UTF-8 byte order mark, which TOML (v1.0.0) does not
// allow and go-toml refuses as "invalid character … U+00EF":
// decodePolicy says what it is instead (bomFault).
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

const bomFault = "not valid TOML: the file starts with a UTF-8 byte order mark (EF BB BF), which TOML does not allow; save it without one"

// decodePolicy reads the TOML text into a policyDoc, checking each key's
// shape itself so that errors speak of the file's keys, not Go types.
func decodePolicy(path string, text []byte) (policyDoc, error) {
	var doc policyDoc
	var raw map[string]any
	if bytes.HasPrefix(text, utf8BOM) {
		return doc, &PolicyError{Path: path, Line: 1, Column: 1, Msg: bomFault}
	}
	if err := toml.Unmarshal(text, &raw); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			l, c := de.Position()
			return doc, &PolicyError{Path: path, Line: l, Column: c, Msg: "not valid TOML: " + strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return doc, &PolicyError{Path: path, Msg: "not valid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		li, _ := locateKey(text, keys[i])
		lj, _ := locateKey(text, keys[j])
		return li < lj
	})
	for _, k := range keys {
		v := raw[k]
		l, c := locateKey(text, k)
		fault := func(format string, a ...any) error {
			return &PolicyError{Path: path, Line: l, Column: c, Msg: k + ": " + fmt.Sprintf(format, a...)}
		}
		switch k {
		case "allow", "deny", "review", "require_check":
			list, ok := v.([]any)
			if !ok {
				return doc, fault(`want a list of patterns such as ["Bash(git push:*)"], got %s`, tomlKind(v))
			}
			out := make([]string, 0, len(list))
			for i, e := range list {
				s, ok := e.(string)
				if !ok {
					return doc, fault(`entry %d: want a pattern string such as "Bash(git push:*)", got %s`, i+1, tomlKind(e))
				}
				out = append(out, s)
			}
			switch k {
			case "allow":
				doc.Allow = out
			case "deny":
				doc.Deny = out
			case "require_check":
				doc.RequireCheck = out
			default:
				doc.Review = out
			}
		case "project_allows":
			b, ok := v.(bool)
			if !ok {
				return doc, fault("want true or false, got %s", tomlKind(v))
			}
			doc.ProjectAllows = b
		case "risk":
			tbl, ok := v.(map[string]any)
			if !ok {
				return doc, fault(`want a table such as [risk] "Bash(git push:*)" = "high", got %s`, tomlKind(v))
			}
			doc.Risk = make(map[string]string, len(tbl))
			for pat, r := range tbl {
				s, ok := r.(string)
				if !ok {
					l, c := locate(text, pat)
					return doc, &PolicyError{Path: path, Line: l, Column: c, Msg: fmt.Sprintf("risk %q: want low, medium, high or critical as a string, got %s", pat, tomlKind(r))}
				}
				doc.Risk[pat] = s
			}
		default:
			what := "key"
			if _, ok := v.(map[string]any); ok {
				what = "table"
				k = "[" + k + "]"
			}
			return doc, &PolicyError{Path: path, Line: l, Column: c, Msg: fmt.Sprintf("unknown %s %s (want the keys allow, deny, review, require_check, project_allows and the table [risk]; remove or rename it)", what, k)}
		}
	}
	return doc, nil
}

// tomlKind names the TOML type of a decoded value for error messages.
func tomlKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64, uint64, int:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	default:
		return "a date or time"
	}
}

// locateKey returns the 1-based line and column of top-level key k in
// text, as "k =" or "[k]" (bare or quoted), or 0, 0.
func locateKey(text []byte, k string) (int, int) {
	for i, line := range strings.Split(string(text), "\n") {
		t := strings.TrimLeft(line, " \t")
		col := len(line) - len(t) + 1
		if strings.HasPrefix(t, "[") {
			t, col = strings.TrimLeft(t[1:], "[ \t"), col+1
		}
		for _, name := range []string{k, `"` + k + `"`, "'" + k + "'"} {
			if rest, ok := strings.CutPrefix(t, name); ok {
				if rest = strings.TrimLeft(rest, " \t"); rest == "" || strings.ContainsAny(rest[:1], "=].") {
					return i + 1, col
				}
			}
		}
	}
	return 0, 0
}

func sortByPlace(text []byte, rs []riskRule) {
	at := func(r riskRule) int { return bytes.Index(text, []byte(`"`+r.p.Source+`"`)) }
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && at(rs[j]) < at(rs[j-1]); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// locate returns the 1-based line and column of the first quoted
// occurrence of s in text, or 0, 0.
func locate(text []byte, s string) (int, int) {
	i := bytes.Index(text, []byte(`"`+s+`"`))
	if i < 0 {
		i = bytes.Index(text, []byte(`'`+s+`'`))
	}
	if i < 0 {
		return 0, 0
	}
	line := bytes.Count(text[:i], []byte("\n")) + 1
	col := i - bytes.LastIndexByte(text[:i], '\n')
	return line, col
}

// Call is one tool call as the gate sees it.
type Call struct {
	Tool  string          // e.g. "Bash", "Edit", "mcp__github__create_issue"
	Input json.RawMessage // the tool's input as the agent sent it
	Dir   string          // the project directory relative paths are taken from
	// Mode is the session's permission mode as Logbook holds it
	// (events.ModeReadOnly, ModeWorkspaceWrite, ModeAuto,
	// ModeFullAccess; "" unknown): the widest mode its commands may ask
	// `logbook exec` for without pulling a lever (events.ModeRank).
	Mode string
	// Sessions are the ids of the session the call is made in and of
	// its parent session, if any: the sessions a `logbook exec` it runs
	// may name without pulling a lever (execLever). Empty: not known,
	// and not checked.
	Sessions []string
	// sh is the shell reading of a shell tool's command, set by parsed;
	// nil: read when needed.
	sh *shell.Script
}

// Action returns the exact boundary a call crosses, for people and
// patterns: a Bash command, a file path, a URL, else the input's JSON
// (each cut to 400 bytes).
func (c Call) Action() string {
	return cut(c.action(), maxAction)
}

// action is Action uncut.
func (c Call) action() string {
	var in map[string]any
	_ = json.Unmarshal(c.Input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	var a string
	switch c.Tool {
	case "Bash":
		a = str("command")
	case "Edit", "Write", "Read", "MultiEdit", "NotebookEdit", "NotebookRead":
		a = str("file_path")
		if a == "" {
			a = str("notebook_path")
		}
	case "WebFetch":
		a = str("url")
	case "exec":
		a = str("command")
	case "stdin":
		// Input for a command never enters the log: its size only.
		n, _ := in["bytes"].(float64)
		return fmt.Sprintf("%d bytes of input to command %s", int(n), str("command"))
	}
	if a == "" && len(c.Input) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, c.Input) == nil {
			a = buf.String()
		} else {
			a = string(c.Input)
		}
	}
	return a
}

// Match is what a policy says of a call.
type Match struct {
	Action  string // ActionAllow, ActionDeny, ActionReview; "" when no rule matches
	Pattern string // the rule's pattern
	Risk    string // the highest risk class of a matching [risk] pattern, "" if none
	Path    string // the policy file the rule came from
	// Through is "" when the rule matches what the call names; else the
	// rule may match only a program known only when the command runs,
	// and Through says which (for the deny's reason).
	Through string
	// Why, for a review the rule asks though it is not a review rule's
	// match (a deny or review rule that may match what the command
	// touches, which the gate cannot list), says so: what the command
	// does and which of the rule's kinds ("deny rule Edit(**/.env)");
	// "" otherwise.
	Why string
}

// RequireCheck returns the first require_check pattern of pols that may
// match c, read as a deny rule is (any reading of a shell command: a
// word known only when it runs may be anything), and the file it came
// from; "" when none does. Such a call is denied unless a passed check
// run judged the tree of the workspace it runs in (Gate.Checks).
func RequireCheck(pols []*Policy, c Call) (pattern, path string) {
	if !slices.ContainsFunc(pols, func(p *Policy) bool { return len(p.requireCheck) > 0 }) {
		return "", "" // and c's command line is not read for nothing
	}
	c = c.parsed()
	for _, p := range pols {
		for _, pt := range p.requireCheck {
			if shellTool(c.Tool) {
				if pt.shellMayMatch(c, c.script()) {
					return pt.Source, p.Path
				}
				continue
			}
			if pt.matches(c, false) {
				return pt.Source, p.Path
			}
		}
	}
	return "", ""
}

// Decide returns what p says of c: a matching deny wins, then review,
// then allow.
func (p *Policy) Decide(c Call) Match {
	var m Match
	c = c.parsed()
	if p.guard != nil {
		if pat, risk := p.guard(c); pat != "" {
			return Match{Action: ActionReview, Pattern: pat, Risk: risk, Path: p.Path}
		}
	}
	// The guard said nothing of c (it runs once a call: its reading of
	// a long command line is most of a decision's cost): the risk is
	// the [risk] rules' alone.
	if shellTool(c.Tool) {
		m = p.decideShell(c)
		m.Risk = p.ruleRisk(c)
		return m
	}
	for _, set := range []struct {
		action string
		ps     []Pattern
	}{{ActionDeny, p.deny}, {ActionReview, p.review}, {ActionAllow, p.allow}} {
		for _, pt := range set.ps {
			if pt.matches(c, set.action == ActionAllow) {
				m = Match{Action: set.action, Pattern: pt.Source, Path: p.Path}
				break
			}
		}
		if m.Action != "" {
			break
		}
	}
	m.Risk = p.ruleRisk(c)
	return m
}

// ruleRisk returns the highest class of p's [risk] patterns that match
// c, "" if none. A call the guard speaks of takes the guard's class
// instead (Decide).
func (p *Policy) ruleRisk(c Call) string {
	r := ""
	for _, rr := range p.risk {
		if rr.p.matches(c, false) {
			r = review.MaxRisk(r, rr.risk)
		}
	}
	return r
}

// Pattern is one rule in the style of Claude Code's permission rules:
//
//	Tool              every call of Tool; "*" globs the name (mcp__*)
//	Bash(git status)  the exact command
//	Bash(git push:*)  the command, or the command followed by a space and more
//	Bash(npm run *)   "*" matches any text
//	Edit(src/**)      a path glob: ** any directories, * within one; relative
//	                  to the project, /abs absolute, ~/ the home directory
//	WebFetch(domain:example.com)  a URL's host
//	Other(glob)       matched against the call's Action
//
// A Bash command is read as bash 5.2 reads it (package shell, on
// mvdan.cc/sh/v3): every simple command in it, the commands wrappers run
// (bash -c, eval, env, sudo, xargs, find -exec, ssh, git -c, …) and its
// redirection targets. A deny or review pattern matches when any reading
// of any command may match it (a word known only when it runs may be any
// text; /bin/rm is also rm); the policy allows the command only when it
// reads whole, runs nothing the gate cannot see (eval "$x", source f,
// bash reading stdin), and every command is known without running it and
// matched by one of its allow patterns, and every file it writes by a
// redirection or an option is allowed by a Write or Edit pattern (or is
// /dev/null, /dev/stdout, /dev/stderr, /dev/tty). A file a program
// writes, creates or removes by its operands (cp x .env, rm f, sed -i,
// tar -x -C DIR: shell.Script.Changes) meets the Write and Edit deny
// and review patterns, while the pattern that allows the program
// allows it. The pattern "Bash" alone allows every command
// line that reads whole and runs nothing the gate cannot see.
type Pattern struct {
	Source string // as written
	Tool   string // tool name glob
	Spec   string // "" for every call of the tool
	HasArg bool
}

// ParsePattern parses one rule.
func ParsePattern(s string) (Pattern, error) {
	p := Pattern{Source: s}
	name, rest, ok := strings.Cut(s, "(")
	if ok {
		if !strings.HasSuffix(rest, ")") {
			return p, errors.New(`missing ")" at the end`)
		}
		p.Spec, p.HasArg = strings.TrimSuffix(rest, ")"), true
		if p.Spec == "" {
			return p, errors.New("empty argument in ()")
		}
	}
	p.Tool = strings.TrimSpace(name)
	if p.Tool == "" {
		return p, errors.New("no tool name")
	}
	for _, r := range p.Tool {
		if !(r == '_' || r == '*' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return p, fmt.Errorf("tool name %q holds %q", p.Tool, r)
		}
	}
	if _, err := path.Match(p.Tool, ""); err != nil {
		return p, fmt.Errorf("tool name %q is not a valid glob (an unclosed \"[\" or a trailing \"\\\")", p.Tool)
	}
	for _, t := range caseSensitiveTools {
		if p.Tool != t && strings.EqualFold(p.Tool, t) {
			// Tool names compare exactly: the rule would never match.
			return p, fmt.Errorf("tool name %q matches no tool: names are compared as written (write %q)", p.Tool, t)
		}
	}
	if !p.HasArg {
		return p, nil
	}
	switch p.Tool {
	case "Edit", "Write", "Read", "MultiEdit", "NotebookEdit":
		for _, seg := range strings.Split(p.Spec, "/") {
			if _, err := path.Match(seg, ""); err != nil {
				return p, fmt.Errorf("path glob %q is malformed at %q (an unclosed \"[\" or a trailing \"\\\"); write \"[[]\" for a literal \"[\"", p.Spec, seg)
			}
		}
	case "WebFetch":
		if d, ok := strings.CutPrefix(p.Spec, "domain:"); ok && strings.TrimSpace(d) == "" {
			return p, errors.New(`empty domain: write a host such as "WebFetch(domain:example.com)"`)
		}
	}
	return p, nil
}

// patternWarning returns how pattern p reads otherwise than it seems
// to, "" when it does not: a Bash pattern with ":*" before its end, which
// there matches a colon and then any text, not "followed by a space and
// more" as ":*" at the end does ("git:*push" never matches "git push");
// and a Bash pattern with spaces at its start or end, two or more
// between words, or a tab or line break ("Bash( shutdown :*)",
// "Bash(reboot  now)"), which matches only a command with such spaces
// inside its quoted words, since a command is matched as its words
// joined by one space. Either may be meant (scp host:* ., echo "a  b"),
// so it is a warning, not a fault.
func patternWarning(p Pattern) string {
	if p.Tool != "Bash" || !p.HasArg {
		return ""
	}
	if strings.ContainsRune(p.Spec, 0) {
		return "it holds a NUL byte, which no command line holds (the gate refuses a command with one), so it never matches"
	}
	spec := strings.TrimSuffix(p.Spec, ":*")
	if norm := strings.Join(strings.Fields(spec), " "); norm != spec {
		return fmt.Sprintf("a command is matched as its words joined by one space, so spaces at the start or end of %q, two or more between its words, or a tab or line break in it match only a command whose quoted words hold them: write %q for the command's words", p.Spec, norm+p.Spec[len(spec):])
	}
	i := strings.Index(spec, ":*")
	if i < 0 {
		return ""
	}
	return fmt.Sprintf("\":*\" inside a pattern matches a colon and then any text (%q never matches %q); only at its end does it mean \"followed by a space and more\": write \"*\" for any text", p.Spec, strings.Replace(spec[:i]+" "+spec[i+2:], "  ", " ", 1))
}

// allowAllWarning returns what an allow pattern p that lets every
// command line through says, "" for any other: p speaks of Bash (its
// tool glob matches it: "Bash", "Ba*", "*") with no argument or one that
// is only "*"s (and a final ":*"). It is a warning, not a fault (the
// README's "Bash alone" may be meant), since such a rule leaves only the
// deny and review rules, the risk classes and the built-in guards
// between an agent and any command (in a project's file, in force only
// where the data dir's sets project_allows).
func allowAllWarning(p Pattern) string {
	if ok, _ := path.Match(p.Tool, "Bash"); !ok {
		return ""
	}
	if p.HasArg && strings.Trim(strings.TrimSuffix(p.Spec, ":*"), "*") != "" {
		return ""
	}
	return "allows every Bash command line: only deny and review rules, risk classes and the built-in guards stand before a command (in a project's .logbook/policy.toml, in force only where the data dir's policy.toml sets project_allows = true)"
}

// caseSensitiveTools are Claude Code's built-in tools whose names a rule
// most often gives: one written in another case ("bash") is refused,
// since names are compared exactly and such a rule, a deny above all,
// would silently never match.
var caseSensitiveTools = []string{"Bash", "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "Task"}

// editTools are Claude Code's built-in tools that edit files, and
// readTools those that read them: a path rule of one edit tool applies
// to every edit tool, and a Read path rule to every read tool, as in
// Claude Code's permission rules ("Edit rules apply to all built-in
// tools that edit files"; Read rules apply "to all built-in tools that
// read files like Grep and Glob", https://code.claude.com/docs/en/permissions).
var (
	editTools = map[string]bool{"Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true}
	readTools = map[string]bool{"Read": true, "NotebookRead": true, "Grep": true, "Glob": true, "LS": true}
)

// appliesTo reports whether pattern p speaks of calls of tool: its tool
// glob matches the name, or p is a path rule of the same family
// (editTools, readTools). A Read rule speaks of a search tool (Grep,
// Glob, LS) for deny and review only: allowing a Read path does not
// allow a search of a tree.
func (p Pattern) appliesTo(tool string, allow bool) bool {
	if ok, _ := path.Match(p.Tool, tool); ok {
		return true
	}
	if !p.HasArg {
		return false
	}
	switch {
	case editTools[p.Tool] && editTools[tool]:
		return true
	case p.Tool == "Read" && (tool == "NotebookRead" || readTools[tool] && !allow):
		return true
	}
	return false
}

func (p Pattern) matches(c Call, allow bool) bool {
	if !p.appliesTo(c.Tool, allow) {
		return false
	}
	if !p.HasArg {
		return true
	}
	var in map[string]any
	_ = json.Unmarshal(c.Input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	if p.Tool == "Read" && (c.Tool == "Grep" || c.Tool == "Glob" || c.Tool == "LS") {
		return !allow && searchMayRead(p.Spec, str("path"), str("pattern"), c.Tool, c.Dir)
	}
	switch c.Tool {
	case "Bash":
		sc := c.script()
		if !allow {
			return p.shellMayMatch(c, sc)
		}
		one := &Policy{allow: []Pattern{p}}
		_, ok := one.shellAllows(c, sc)
		return ok
	case "Edit", "Write", "Read", "MultiEdit", "NotebookEdit", "NotebookRead":
		f := str("file_path")
		if f == "" {
			f = str("notebook_path")
		}
		if !allow {
			// Deny and review win on either reading: as written and as
			// the kernel resolves it now.
			return f != "" && pathMatchesResolved(p.Spec, f, c.Dir)
		}
		return f != "" && pathMatches(p.Spec, f, c.Dir)
	case "WebFetch":
		if d, ok := strings.CutPrefix(p.Spec, "domain:"); ok {
			u := str("url")
			_, host, _ := strings.Cut(u, "://")
			host, _, _ = strings.Cut(host, "/")
			host, _, _ = strings.Cut(host, ":")
			return strings.EqualFold(host, d) || strings.HasSuffix(strings.ToLower(host), "."+strings.ToLower(d))
		}
	}
	return glob(p.Spec, c.Action())
}

// commandMatches matches one simple command against a Bash spec.
func commandMatches(spec, cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	if pre, ok := strings.CutSuffix(spec, ":*"); ok {
		return cmd == pre || strings.HasPrefix(cmd, pre+" ")
	}
	return glob(spec, cmd)
}

// glob matches s against pattern, where "*" matches any text (slashes
// and spaces too) and every other byte itself.
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// pathMatches matches file (absolute) against a path glob: relative to
// dir, "/…" absolute, "~/…" in the home directory; "**" any directories.
func pathMatches(spec, file, dir string) bool {
	switch {
	case strings.HasPrefix(spec, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		spec = filepath.Join(home, spec[2:])
	case strings.HasPrefix(spec, "//"):
		spec = spec[1:]
	case strings.HasPrefix(spec, "/"):
	case strings.HasPrefix(spec, "**"):
		// any place
	default:
		if dir == "" {
			return false
		}
		spec = filepath.Join(dir, spec)
	}
	if !filepath.IsAbs(file) && dir != "" {
		file = filepath.Join(dir, file)
	}
	file = filepath.Clean(file)
	return matchSegments(strings.Split(strings.Trim(spec, "/"), "/"), strings.Split(strings.Trim(file, "/"), "/"))
}

// searchMayRead reports whether a search tool's call (Grep, Glob, LS)
// from directory dir may read a file path glob spec matches: the tree it
// searches is path (dir when ""), for Glob below the part of its
// pattern before the first glob character, as written and as the kernel
// resolves it now; spec matches the tree, a path inside it, or a path
// it lies inside.
func searchMayRead(spec, dirPath, pattern, tool, dir string) bool {
	root := or(dirPath, dir)
	if h := homeReading(root); h != "" {
		root = h
	}
	if root == "" {
		return true // a tree the gate cannot place: any
	}
	if tool == "Glob" && pattern != "" {
		var fixed []string
		for _, seg := range strings.Split(pattern, "/") {
			if strings.ContainsAny(seg, "*?[{") {
				break
			}
			fixed = append(fixed, seg)
		}
		pre := strings.Join(fixed, "/")
		if h := homeReading(pre); h != "" {
			pre = h
		}
		switch {
		case strings.HasPrefix(pattern, "/"):
			root = "/" + pre
		case pre != "":
			root = root + "/" + pre
		}
	}
	if !filepath.IsAbs(root) {
		if dir == "" {
			return true
		}
		root = dir + "/" + root
	}
	// root is as written (its letters not cleaned): a ".." after a link
	// is taken from the link's target by the kernel (kernelPath).
	for _, r := range []string{filepath.Clean(root), resolvedPath(root, dir), kernelPath(root)} {
		if r == "" {
			continue
		}
		pat, ok := specSegments(spec, dir)
		if !ok || treeMatches(pat, strings.Split(strings.Trim(r, "/"), "/")) {
			return true
		}
	}
	return false
}

// specSegments returns path glob spec's segments as an absolute path
// (pathMatches), false when it cannot be placed (a home directory or a
// project directory that is unknown).
func specSegments(spec, dir string) ([]string, bool) {
	switch {
	case strings.HasPrefix(spec, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, false
		}
		spec = filepath.Join(home, spec[2:])
	case strings.HasPrefix(spec, "//"):
		spec = spec[1:]
	case strings.HasPrefix(spec, "/"), strings.HasPrefix(spec, "**"):
	default:
		if dir == "" {
			return nil, false
		}
		spec = filepath.Join(dir, spec)
	}
	return strings.Split(strings.Trim(spec, "/"), "/"), true
}

// treeMatches reports whether path glob segments pat may match the
// tree segs names, a path below it, or a path it lies below.
func treeMatches(pat, segs []string) bool {
	if len(segs) == 1 && segs[0] == "" {
		return true // the root: every path lies below it
	}
	for len(pat) > 0 && len(segs) > 0 {
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return true
}

// treeMayHold reports whether path glob spec may match a path below
// folder dir (as written, read from cwd; as the kernel resolves it now;
// with a leading "~" the home directory), or dir itself: a file a
// program may write under a folder whose files the gate cannot list.
func treeMayHold(spec, dir, cwd string) bool {
	pat, ok := specSegments(spec, cwd)
	if !ok {
		return false // as pathMatches: a rule it cannot place matches nothing
	}
	for _, d := range []string{dir, homeReading(dir)} {
		if d == "" {
			continue
		}
		raw := d
		if !filepath.IsAbs(d) {
			if cwd == "" {
				continue
			}
			d, raw = filepath.Join(cwd, d), cwd+"/"+d
		}
		// A ".." after a link is taken from the link's target by the
		// kernel (kernelPath), not from its letters.
		for _, r := range []string{filepath.Clean(d), resolvedPath(d, cwd), kernelPath(raw)} {
			if r == "" {
				continue
			}
			var segs []string
			if t := strings.Trim(r, "/"); t != "" {
				segs = strings.Split(t, "/")
			}
			if belowMatches(pat, segs) {
				return true
			}
		}
	}
	return false
}

// belowMatches reports whether path glob segments pat may match segs
// followed by any number of segments.
func belowMatches(pat, segs []string) bool {
	for ; len(segs) > 0; pat, segs = pat[1:], segs[1:] {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
	}
	return true
}

func matchSegments(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if matchSegments(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], segs[0]); !ok {
		return false
	}
	return matchSegments(pat[1:], segs[1:])
}

// builtin holds rules no policy file can lift: writes to a policy file
// or to Logbook's project folder, and shell commands that name either
// (guard), are reviewed at critical risk, so only a person can allow
// them. Made on first use, not when the package loads: most commands
// of the logbook binary never judge a call.
var builtin = sync.OnceValue(func() *Policy { return builtinFor("") })

// builtinFor returns the built-in rules for data dir dd ("" for none):
// a file tool's write into dd, or a shell command naming it, is guarded
// as a project's .logbook folder is.
func builtinFor(dd string) *Policy {
	p := &Policy{guard: guard(dd)}
	for _, s := range []string{"Edit(**/.logbook/**)", "Write(**/.logbook/**)", "MultiEdit(**/.logbook/**)", "NotebookEdit(**/.logbook/**)"} {
		pt, _ := ParsePattern(s)
		p.review = append(p.review, pt)
		p.risk = append(p.risk, riskRule{pt, review.RiskCritical})
	}
	return p
}

// Policies loads and keeps the policy files: the data dir's and each
// project's. A file is re-read when its size or modification time
// changes; a file that no longer parses keeps the policy read before it
// in force (Errors reports it). Safe for concurrent use.
type Policies struct {
	DataDir string // holds PolicyFile; "" for none
	mu      sync.Mutex
	files   map[string]*loaded
	builtin *Policy // builtinFor(DataDir), made on first use
}

type loaded struct {
	stamp  string
	policy *Policy // the last good one, nil if none
	err    error   // the newest load's error, nil if it parsed
}

// For returns the policies in force for a call in project dir, project
// first (the built-in rules, then dir/.logbook/policy.toml and each
// ancestor's of dir, nearest first, then the data dir's policy.toml). A
// file that no longer parses keeps the policy read before it in force,
// and its error is in stale; a file that has never parsed has no policy
// in force, and its error is in broken: the caller must fail closed on
// those.
//
// The project's file is opened following no symbolic link below dir,
// and, when peer is not nil (the uid of the system socket's peer whose
// call this is: serve runs as another user), read only when it is the
// peer's own or root's (openProject); nil is per-user mode. Its errors
// are *ProjectPolicyError, which quote nothing of the file (their Detail
// does, for serve's own log). The data dir's file is read as it always
// was, and its errors (*PolicyError) quote the fault for its owner. A
// project's policies come without their allow rules unless the data
// dir's file sets project_allows = true (Policy.withoutAllow).
func (ps *Policies) For(dir string, peer *uint32) (pols []*Policy, broken, stale []error) {
	ps.mu.Lock()
	if ps.builtin == nil {
		ps.builtin = builtinFor(ps.DataDir)
	}
	pols = []*Policy{ps.builtin}
	ps.mu.Unlock()
	var data *loaded
	if ps.DataDir != "" {
		data = ps.load(filepath.Join(ps.DataDir, PolicyFile))
	}
	// The project's files: dir's and each of its ancestors', nearest
	// first, so that a call made from a folder below a project's top is
	// under the project's rules too (a cd must not leave them), and a
	// folder's own file adds to its ancestors' rather than replacing
	// them (the strictest answer wins).
	var projects []*loaded
	for _, a := range projectDirs(dir) {
		if l := ps.loadProject(a, peer); l != nil {
			projects = append(projects, l)
		}
	}
	// A project's allow rules are in force only where the data dir's
	// file says so (project_allows): whoever commits to a project
	// writes its file, and a repository cloned is anyone's.
	projectAllows := data != nil && data.policy != nil && data.policy.projectAllows
	for i, l := range append(projects, data) {
		if l == nil {
			continue
		}
		switch {
		case l.policy != nil:
			pol := l.policy
			if i < len(projects) && !projectAllows && pol.hasAllow() {
				pol = pol.withoutAllow()
			}
			pols = append(pols, pol)
			if l.err != nil {
				stale = append(stale, l.err)
			}
		case l.err != nil:
			broken = append(broken, l.err)
		}
	}
	return pols, broken, stale
}

// projectDirs returns dir, cleaned, and each of its ancestors up to the
// root, nearest first: where For looks for a project's policy file.
// None for "" or a relative dir (a call's directory is absolute).
func projectDirs(dir string) []string {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil
	}
	var dirs []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == filepath.Dir(d) {
			return dirs
		}
	}
}

// strictness ranks a rule action: deny 3, review 2, allow 1, none 0.
func strictness(action string) int {
	switch action {
	case ActionDeny:
		return 3
	case ActionReview:
		return 2
	case ActionAllow:
		return 1
	}
	return 0
}

// Load reads policy file p now (as For would), and returns its error,
// nil when it parses or does not exist.
func (ps *Policies) Load(p string) error {
	if l := ps.load(p); l != nil {
		return l.err
	}
	return nil
}

func (ps *Policies) load(p string) *loaded {
	fi, err := os.Stat(p)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.files == nil {
		ps.files = map[string]*loaded{}
	}
	old := ps.files[p]
	if errors.Is(err, os.ErrNotExist) {
		delete(ps.files, p)
		return nil
	}
	if err != nil {
		return &loaded{err: &PolicyError{Path: p, Msg: err.Error()}}
	}
	stamp := fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
	if old != nil && old.stamp == stamp {
		return old
	}
	nl := &loaded{stamp: stamp}
	if old != nil {
		nl.policy = old.policy
	}
	text, err := hookspool.ReadRegular(p, MaxPolicyFile)
	if err != nil {
		// The file may be a FIFO or a device (a cloned project can hold a
		// symlink to /dev/zero): it is refused without reading.
		nl.err = &PolicyError{Path: p, Msg: strings.TrimPrefix(err.Error(), p+": ")}
	} else if pol, err := ParsePolicy(p, text); err != nil {
		nl.err = err
	} else {
		nl.policy = pol
	}
	ps.files[p] = nl
	return nl
}

// Decide returns what the policies say of c: the strictest action any of
// them gives (deny over review over allow), so that no policy lifts
// another's deny or turns its review into an allow — a project's file,
// which whoever commits to the project writes, cannot relax the data
// dir's. Among policies giving that action the first (in order) decides
// the match's pattern and path, the first whose rule matches what the
// call names (no Match.Through) before one whose rule may match only a
// program known only when it runs. Risk is the highest class any policy
// gives c (each policy's Decide says its own). c's command line is
// read once, and each policy's guard runs once.
//
// A shell command that changes its directory (cd, pushd, popd) is judged
// from every directory it may run its commands in (scriptDirs), each
// reading on its own: the strictest action any reading gives wins, and
// an allow needs every reading to allow.
func Decide(pols []*Policy, c Call) Match {
	c = c.parsed()
	if c.sh == nil {
		return decideIn(pols, c)
	}
	dirs := scriptDirs(c.sh, c.Dir)
	if len(dirs) <= 1 {
		return decideIn(pols, c)
	}
	var out Match
	risk := ""
	for i, d := range dirs {
		cc := c
		cc.Dir = d
		m := decideIn(pols, cc)
		risk = review.MaxRisk(risk, m.Risk)
		switch sm, so := strictness(m.Action), strictness(out.Action); {
		case i == 0:
			out = m
		case sm >= 2 && sm > so:
			out = m // deny over review over the rest, from any reading
		case so < 2 && sm == 0:
			out = m // no rule matches this reading: nothing is allowed
		}
	}
	out.Risk = risk
	return out
}

// decideIn is Decide of c from its own directory alone.
func decideIn(pols []*Policy, c Call) Match {
	c = withRepoTops(c)
	var first Match
	risk := ""
	for _, p := range pols {
		m := p.Decide(c)
		risk = review.MaxRisk(risk, m.Risk)
		switch sm, sf := strictness(m.Action), strictness(first.Action); {
		case sm > sf, sm == sf && first.Through != "" && m.Through == "":
			first = m
		}
	}
	first.Risk = risk
	return first
}

// withRepoTops returns c with each change of a git work tree whose top
// its words do not name (shell.Redirection.RepoTop) read from c's
// directory: the nearest ancestor of its target that holds .git (a
// folder, or a file: a linked work tree's), found on disk now; the
// target itself when none does or the directory is unknown. c's script
// is copied, not changed: the same script is judged from every
// directory a command may reach.
func withRepoTops(c Call) Call {
	sc := c.sh
	if sc == nil || !slices.ContainsFunc(sc.Changes, func(rd shell.Redirection) bool { return rd.RepoTop }) {
		return c
	}
	cp := *sc
	cp.Changes = slices.Clone(sc.Changes)
	for i, rd := range cp.Changes {
		if !rd.RepoTop {
			continue
		}
		d, ok := absTarget(rd, c.Dir)
		if !ok {
			continue
		}
		if top := workTreeTop(d); top != "" {
			cp.Changes[i].Target = shell.Word{Value: top, Static: true, Reading: top, Glob: top}
		}
	}
	c.sh = &cp
	return c
}

// absTarget returns change rd's target as an absolute path, a relative
// one read from dir; false when the target is known only when the
// command runs, or is relative and dir unknown.
func absTarget(rd shell.Redirection, dir string) (string, bool) {
	if !rd.Target.Static {
		return "", false
	}
	d := rd.Target.Value
	if filepath.IsAbs(d) {
		return d, true
	}
	if dir == "" {
		return "", false
	}
	return filepath.Join(dir, d), true
}

// workTreeTop returns the top of the git work tree absolute directory
// d lies in: the nearest of d and its ancestors that holds .git (a
// folder, or a file: a linked work tree's), on disk now; "" when none
// does.
func workTreeTop(d string) string {
	for top := filepath.Clean(d); ; top = filepath.Dir(top) {
		if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
			return top
		}
		if top == "/" || top == "." {
			return ""
		}
	}
}

// maxScriptDirs bounds the directories scriptDirs follows a command
// into; a command that may reach more is judged with a fault (never
// allowed).
const maxScriptDirs = 64

// scriptDirs returns the directories sc's commands may run in, dir (the
// call's; "" unknown) first, as bash moves among them: each cd or pushd
// to a word known before it runs leads from every directory reached so
// far to that word read from it, both as bash's cd reads it by default
// (its letters cleaned: a ".." after a link takes the link's folder) and
// as the kernel resolves it (cd -P: from the link's target); "~" and no
// operand lead to the home directory. A cd may fail, or run in a
// subshell or a branch not taken, so every directory reached stays
// possible; popd and a pushd of the stack's entries lead only to
// directories reached already. A cd to a word known only when it runs,
// cd - and a "~-" (the shell's directory before this one), a line that
// gives CDPATH or OLDPWD a value, more than maxScriptDirs directories,
// or a relative cd from an unknown directory add a fault to sc: the
// command is never allowed. (A CDPATH in the agent's own environment is
// not seen: the hook does not send it.) A cd that may run again (a loop,
// a function, a trap: shell.Command.Repeats) is followed again from
// every directory reached until none leads anywhere new; a cd to a
// variable the line gives only plain words is read as each of them
// (givenValues); a wrapper's directory option (shell.Command.Chdir) is a
// cd for its command, git's work-tree top found on disk; a directory a
// wrapper names that the gate cannot know, a line that sets DIRSTACK or
// BASHOPTS or may turn on cdable_vars, and a relative pushd -n the
// directory stack may be used for are faults.
func scriptDirs(sc *shell.Script, dir string) []string {
	dirs := []string{dir}
	seen := map[string]bool{dir: true}
	add := func(d string) bool {
		if d == "" || seen[d] {
			return true
		}
		if len(dirs) == maxScriptDirs {
			sc.Faults = append(sc.Faults, fmt.Sprintf("the command may change to more than %d directories", maxScriptDirs))
			return false
		}
		seen[d] = true
		dirs = append(dirs, d)
		return true
	}
	// The line sets what cd reads beside its operand (CDPATH: the
	// folders a relative operand is looked up in; OLDPWD: where cd -
	// leads; HOME: where cd alone, ~ and $HOME lead): where a cd of it
	// leads is then known only when it runs.
	sets := func(name string) bool {
		return name != "HOME" && sc.Unheld[name] || slices.ContainsFunc(sc.Given, func(a shell.Assignment) bool { return a.Name == name })
	}
	// HOME may also be read into (printf -v, read) or given in a
	// subshell or before a command: a cd to the home directory then
	// leads where only the run knows.
	homeUnsure := func() bool {
		sc.Faults = append(sc.Faults, "the command may set HOME, which a cd home reads")
		return true
	}
	cds := slices.ContainsFunc(sc.Commands, func(c shell.Command) bool {
		return len(c.Chdir) > 0 || slices.ContainsFunc(c.Args, func(w shell.Word) bool {
			return w.Static && (path.Base(w.Value) == "cd" || path.Base(w.Value) == "pushd")
		})
	})
	if !cds {
		return dirs
	}
	// DIRSTACK: where popd, pushd +N and cd ~N lead; BASHOPTS: the
	// shell options a bash started by the line begins with.
	for _, name := range []string{"CDPATH", "OLDPWD", "HOME", "DIRSTACK", "BASHOPTS"} {
		if sets(name) {
			sc.Faults = append(sc.Faults, "the command may set "+name+", which cd reads")
			return dirs
		}
	}
	for _, c := range sc.Commands {
		if len(c.Args) > 0 && c.Args[0].Static && path.Base(c.Args[0].Value) == "shopt" && slices.ContainsFunc(c.Args[1:], func(w shell.Word) bool {
			return !w.Static || w.Value == "cdable_vars"
		}) {
			// cd NAME leads to $NAME when no folder NAME exists.
			sc.Faults = append(sc.Faults, "the command may turn on cdable_vars, with which cd reads variables")
			return dirs
		}
	}
	// A wrapper that runs its command in a directory the gate cannot
	// know (find -execdir, sudo -i, su -): its relative words may be
	// anything.
	unknown := func() bool {
		sc.Faults = append(sc.Faults, "a command runs in a directory known only when it runs")
		return false
	}
	// The directory stack used (popd, pushd +N, cd ~N) leads to the
	// directories reached, but for an entry pushd -n put there as
	// written, which is read from wherever the shell is when it is used.
	if slices.ContainsFunc(sc.Commands, usesDirStack) && slices.ContainsFunc(sc.Commands, pushesWord) {
		sc.Faults = append(sc.Faults, "pushd -n puts a directory on the stack as written, read from where the shell is when it is used")
		return dirs
	}
	// A cd that may run more than once (in a loop, a function) leads on
	// from where it led: the cds are followed again from every directory
	// reached until none leads anywhere new (or to more than
	// maxScriptDirs).
	repeats := slices.ContainsFunc(sc.Commands, func(c shell.Command) bool { return c.Repeats })
	for {
		reached := len(dirs)
		if !followCds(sc, &dirs, add, unknown, homeReading, homeUnsure) {
			return dirs
		}
		if !repeats || len(dirs) == reached {
			return dirs
		}
	}
}

// followCds follows each cd and pushd of sc once, in order, from every
// directory in *dirs when it is met (scriptDirs), adding where each
// leads with add. It returns false when a fault of sc ends the reading
// (add refused a directory, or a cd leads where the gate cannot know).
func followCds(sc *shell.Script, dirs *[]string, add func(string) bool, unknown func() bool, homeReading func(string) string, homeUnsure func() bool) bool {
	for _, cmd := range sc.Commands {
		for _, d := range cmd.Chdir {
			// A wrapper's directory option (env -C, sudo -D …), read as
			// a cd to it; its command's words from there.
			if d.Value == shell.WorkTreeTop.Value {
				// git's: the top of the work tree each directory
				// reached lies in.
				// Outside one, git stops before it runs anything.
				for _, from := range slices.Clone(*dirs) {
					if from == "" && !unknown() {
						return false
					}
					if top := workTreeTop(from); top != "" && !add(top) {
						return false
					}
				}
				continue
			}
			if !d.Static && !unknown() || d.Static && !followCd(sc, cmd, &d, dirs, add, homeReading, homeUnsure) {
				return false
			}
		}
		cmd = bareBuiltin(cmd)
		if len(cmd.Args) == 0 || !cmd.Args[0].Static {
			continue
		}
		switch path.Base(cmd.Args[0].Value) {
		case "cd", "pushd":
		default:
			continue
		}
		var target *shell.Word
		for i := 1; i < len(cmd.Args); i++ {
			a := cmd.Args[i]
			if a.Static && a.Value == "--" {
				if i+1 < len(cmd.Args) {
					target = &cmd.Args[i+1]
				}
				break
			}
			if a.Static && strings.HasPrefix(a.Value, "-") && a.Value != "-" {
				continue // -P, -L, -e, -@
			}
			if a.Static && path.Base(cmd.Args[0].Value) == "pushd" && stackIndex(a.Value) {
				break // pushd +N: a directory of the stack, reached already
			}
			target = &cmd.Args[i]
			break
		}
		if target != nil && target.Static && target.Value == "-" {
			// $OLDPWD (cd -, cd -- -, pushd -): before the line's first
			// cd, the directory the shell was in before this one, which
			// the gate does not know.
			sc.Faults = append(sc.Faults, path.Base(cmd.Args[0].Value)+" - leads to a directory the gate does not know")
			return false
		}
		targets := []*shell.Word{target}
		if target != nil && !target.Static {
			if vs := givenValues(sc, *target); vs != nil {
				targets = vs // cd "$d" of a for loop's words, or of d=word
			}
		}
		for _, target := range targets {
			if !followCd(sc, cmd, target, dirs, add, homeReading, homeUnsure) {
				return false
			}
		}
	}
	return true
}

// followCd follows one cd or pushd, cmd, to target (nil: none given),
// from every directory in *dirs (followCds); false when a fault of sc
// ends the reading.
func followCd(sc *shell.Script, cmd shell.Command, target *shell.Word, dirs *[]string, add func(string) bool, homeReading func(string) string, homeUnsure func() bool) bool {
	to := ""
	switch {
	case target == nil:
		if len(cmd.Args) > 1 {
			return true
		}
		if sc.Unheld["HOME"] && homeUnsure() {
			return false
		}
		to = homeReading("~") // cd alone: the home directory
	case !target.Static && (target.Glob == "${HOME}" || strings.HasPrefix(target.Glob, "${HOME}/")) && homeReading("~") != "" &&
		!strings.ContainsAny(strings.TrimPrefix(target.Glob, "${HOME}"), "*?[$"):
		// "$HOME/x": the home directory, as "~/x" is (the line
		// giving HOME a value is a fault of its own above).
		if sc.Unheld["HOME"] && homeUnsure() {
			return false
		}
		to = homeReading("~") + strings.TrimPrefix(target.Glob, "${HOME}")
	case !target.Static:
		// A directory known only when it runs: a relative word after
		// it may be anywhere.
		sc.Faults = append(sc.Faults, "a cd to a directory known only when it runs")
		return false
	case strings.HasPrefix(target.Value, "~+") || strings.HasPrefix(target.Value, "~-") || stackTilde(target.Value):
		// $PWD and $OLDPWD: the second is the shell's directory
		// before this one, which the gate does not know.
		sc.Faults = append(sc.Faults, "cd to "+target.Value+", a directory the gate does not know")
		return false
	case strings.HasPrefix(target.Value, "~"):
		if (target.Value == "~" || strings.HasPrefix(target.Value, "~/")) && sc.Unheld["HOME"] && homeUnsure() {
			return false
		}
		to = homeReading(target.Value)
	default:
		to = target.Value
	}
	if to == "" {
		return true
	}
	for _, d := range slices.Clone(*dirs) {
		raw := to
		if !filepath.IsAbs(to) {
			if d == "" {
				sc.Faults = append(sc.Faults, "a relative cd from a directory the gate does not know")
				return false
			}
			raw = d + "/" + to
		}
		if !add(filepath.Clean(raw)) || !add(kernelPath(raw)) {
			return false
		}
	}
	return true
}

// bareBuiltin returns c without the builtin or command words before the
// builtin it runs (builtin cd, command pushd).
func bareBuiltin(c shell.Command) shell.Command {
	for len(c.Args) > 1 && c.Args[0].Static && (c.Args[0].Value == "builtin" || c.Args[0].Value == "command") {
		c.Args = c.Args[1:]
	}
	return c
}

// stackIndex reports whether v is "+N" or "-N" (N decimal digits): an
// entry of the directory stack, to pushd, popd and dirs.
func stackIndex(v string) bool {
	return len(v) > 1 && (v[0] == '+' || v[0] == '-') && strings.Trim(v[1:], "0123456789") == ""
}

// stackTilde reports whether word v begins with "~N", "~+N" or "~-N" (N
// decimal digits): bash's tilde for an entry of the directory stack.
func stackTilde(v string) bool {
	t, ok := strings.CutPrefix(v, "~")
	if !ok {
		return false
	}
	t, _, _ = strings.Cut(t, "/")
	t = strings.TrimLeft(t, "+-")
	return t != "" && strings.Trim(t, "0123456789") == ""
}

// pushesWord reports whether c is a pushd -n of a directory that is not
// an absolute path known before it runs.
func pushesWord(c shell.Command) bool {
	c = bareBuiltin(c)
	if len(c.Args) == 0 || !c.Args[0].Static || path.Base(c.Args[0].Value) != "pushd" {
		return false
	}
	n := false
	for i, a := range c.Args[1:] {
		switch {
		case !a.Static:
			return true // may be -n, and any directory
		case a.Value == "--":
			return n && slices.ContainsFunc(c.Args[i+2:], func(w shell.Word) bool { return !w.Static || !filepath.IsAbs(w.Value) })
		case strings.HasPrefix(a.Value, "-") && !stackIndex(a.Value) && a.Value != "-":
			n = n || strings.Contains(a.Value, "n")
		case n && !filepath.IsAbs(a.Value):
			return true
		}
	}
	return false
}

// usesDirStack reports whether c moves to an entry of the directory
// stack: popd, pushd with no directory or with +N or -N, or a cd or
// pushd to "~N", "~+N" or "~-N".
func usesDirStack(c shell.Command) bool {
	c = bareBuiltin(c)
	if len(c.Args) == 0 || !c.Args[0].Static {
		return false
	}
	switch path.Base(c.Args[0].Value) {
	case "popd":
		return true
	case "cd", "pushd":
	default:
		return false
	}
	dir := false
	for _, a := range c.Args[1:] {
		if !a.Static {
			dir = true
			continue
		}
		v := a.Value
		if stackTilde(v) || path.Base(c.Args[0].Value) == "pushd" && stackIndex(v) {
			return true
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			dir = true
		}
	}
	return path.Base(c.Args[0].Value) == "pushd" && !dir // pushd alone: the top two swapped
}

// givenValues returns the values w, a word that is exactly one variable
// ("$d", "${d}"), may have where the line gives that variable only
// words known before it runs (the words of a for loop's list, d=word)
// and uses it after: each a Static word. It returns nil when w is
// anything else, when the variable may hold a value the line does not
// show (the environment's, read from input, appended to, given in a
// subshell: shell.Script.Unsure), when the line touches IFS (how an
// unquoted value is split), or when a value is empty, holds blanks or
// glob characters, or starts with "-", "+" or "~" (read as an option,
// a stack entry or, by cd, not as written).
func givenValues(sc *shell.Script, w shell.Word) []*shell.Word {
	name, ok := strings.CutPrefix(w.Glob, "${")
	if !ok {
		return nil
	}
	if name, ok = strings.CutSuffix(name, "}"); !ok || name == "_" || !shell.IsName(name) || sc.Unsure[name] || sc.Unsure["IFS"] {
		return nil
	}
	var vs []*shell.Word
	for _, a := range sc.Given {
		switch {
		case a.Name == "IFS":
			return nil
		case a.Name != name:
			continue
		case !a.Value.Static || a.Value.Value == "" || strings.ContainsAny(a.Value.Value, " \t\n*?[") || strings.ContainsAny(a.Value.Value[:1], "-+~"):
			return nil
		}
		v := a.Value
		vs = append(vs, &v)
	}
	return vs
}
