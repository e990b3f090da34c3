// Package settings reads and edits Claude Code's settings.json for
// Logbook's hooks: it adds one Logbook hook to every hook event the
// Claude Code adapter reads (package claude's HookEvents), takes
// Logbook's earlier entries out, tells which events a file wires to
// Logbook, and keeps every other key and hook as its owner wrote it.
//
// Which command line a hook runs is the caller's (the binary knows where
// it is installed); what a settings file holds, where Claude Code looks
// for one, and how long it lets a hook run are this package's.
package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"mvdan.cc/sh/v3/shell"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/gate"
	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/jsonfault"
)

// UserPath returns the user's settings file under home directory home:
// home/.claude/settings.json.
func UserPath(home string) string {
	return filepath.Join(home, ".claude", "settings.json")
}

// ProjectPath returns the settings file of the project in directory dir,
// the one `hooks install --project` edits: dir/.claude/settings.json.
func ProjectPath(dir string) string {
	return filepath.Join(dir, ".claude", "settings.json")
}

// ProjectPaths returns every settings file of the project in directory
// dir that may wire hooks, in the order Status reads them:
// dir/.claude/settings.json, then dir/.claude/settings.local.json.
func ProjectPaths(dir string) []string {
	return []string{ProjectPath(dir), filepath.Join(dir, ".claude", "settings.local.json")}
}

// GateTimeoutMargin is how much longer than the gated hook's budget
// Claude Code lets it run (the hook's "timeout" in settings.json): the
// hook itself waits its budget plus a margin for the server, and needs a
// moment to start and answer. Claude Code must never kill a hook that
// waits for a verdict: a hook it kills lets the tool run.
const GateTimeoutMargin = 30 * time.Second

// GateTimeout returns the "timeout" of a gated hook with budget budget,
// in whole seconds, rounded up: budget plus GateTimeoutMargin.
func GateTimeout(budget time.Duration) int {
	return int(math.Ceil((budget + GateTimeoutMargin).Seconds()))
}

// Wires are the hook commands Edit writes: Recorder for every event;
// with Gate set, Gate (with its Timeout, in seconds) for the events the
// gate answers, PreToolUse and PermissionRequest. The zero Wires writes
// nothing: Edit then only takes Logbook's hooks out.
type Wires struct {
	Recorder string // a command line, as sh reads it
	Gate     string // a command line, or "": no gate
	Timeout  int    // seconds; with Gate only
}

// Gated reports whether hook event ev is wired to the gate.
func (w Wires) Gated(ev string) bool {
	return w.Gate != "" && (ev == gate.EventPreToolUse || ev == gate.EventPermissionRequest)
}

// Events returns the hook events Edit wires, in the order it writes
// them: every one the Claude Code adapter reads (claude.HookEvents). The
// slice is the caller's.
func Events() []string { return claude.HookEvents() }

// IsLogbookHook reports whether hook command line command is Logbook's,
// by what it runs (its words as sh splits them): a program named
// logbook-hook, or logbook run as `hook …`, or the binary at path self
// (the running one; "" for none) or the logbook-hook beside it under any
// name (a build installed as logbook-dev, say), run as `hook …` and as
// itself. It reads the file system only to compare self with an absolute
// program path.
func IsLogbookHook(command, self string) bool {
	fields, err := shell.Fields(command, func(string) string { return "" })
	if err != nil || len(fields) == 0 {
		return false
	}
	prog := fields[0]
	switch filepath.Base(prog) {
	case "logbook-hook":
		return true
	case "logbook":
		return slices.Contains(fields[1:], "hook")
	}
	if !filepath.IsAbs(prog) {
		return false
	}
	if self == "" {
		return false
	}
	same := func(a, b string) bool {
		sa, errA := os.Stat(a)
		sb, errB := os.Stat(b)
		return errA == nil && errB == nil && os.SameFile(sa, sb)
	}
	switch {
	case same(prog, self):
		return slices.Contains(fields[1:], "hook")
	case same(prog, filepath.Join(filepath.Dir(self), "logbook-hook")):
		return true
	}
	return false
}

// maxSettingsLinks is how many symlinks Target follows before
// it calls the chain a loop (Linux's own limit is 40).
const maxSettingsLinks = 40

// Target returns the file a settings file path names: path
// itself when it is not a symlink (or does not exist yet), else the
// file at the end of its chain of symlinks (each relative one taken
// from the directory of the link that holds it). Rewriting the target
// in its own directory keeps path a link. A dangling symlink, a loop
// or a chain longer than maxSettingsLinks, and a target that is not a
// regular file are errors naming path.
func Target(path string) (string, error) {
	p := path
	for hops := 0; ; hops++ {
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) && p == path {
			return path, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: a dangling symlink: its target %s does not exist; fix or remove the link, then run this again", path, p)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			if !st.Mode().IsRegular() {
				return "", fmt.Errorf("%s: %s is not a regular file", path, p)
			}
			if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil && p != path {
				p = filepath.Join(dir, filepath.Base(p))
			}
			return p, nil
		}
		if hops >= maxSettingsLinks {
			return "", fmt.Errorf("%s: a symlink loop (more than %d links followed)", path, maxSettingsLinks)
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if !filepath.IsAbs(dest) {
			// Not filepath.Join: a ".." after a symlinked directory is
			// the kernel's to resolve, not a lexical clean's.
			dest = filepath.Dir(p) + string(filepath.Separator) + dest
		}
		p = dest
	}
}

// hookEntry is one hook of a group in settings.json.
type hookEntry struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"` // seconds
}

// WriteBackup writes old beside path as path.<UTC time>.bak (…-2.bak and
// on when that exists: a backup is never overwritten), with file mode
// mode, and returns its name. The time is now's, in seconds. An error is
// the file system's, unwrapped; the caller names path.
func WriteBackup(path string, old []byte, mode fs.FileMode) (string, error) {
	base := fmt.Sprintf("%s.%s", path, time.Now().UTC().Format("20060102T150405Z"))
	for n := 1; ; n++ {
		name := base + ".bak"
		if n > 1 {
			name = fmt.Sprintf("%s-%d.bak", base, n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(old)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return name, err
	}
}

// Edit returns settings.json text old with every Logbook hook removed
// (IsLogbookHook, with self the running binary's path) and, when
// wires.Recorder is set, one group per event of Events added, running
// wires.Gate (with its timeout) for the events the gate answers when that
// is set, else wires.Recorder. Keys keep their order; an event left with
// no group and a "hooks" left empty are removed; text whose JSON value is
// unchanged is returned as it is (old itself). Empty old is an empty
// object. The error says what in old is not Claude Code's settings, where,
// and what was expected; the file's name is the caller's to add. old is
// not modified.
func Edit(old []byte, wires Wires, self string) ([]byte, error) {
	top, hooks, err := parseSettings(old)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(hooks); i++ {
		ev := hooks[i].key
		groups, err := hookGroups(ev, hooks[i].val)
		if err != nil {
			return nil, err
		}
		kept, changed, err := withoutLogbook(ev, groups, self)
		if err != nil {
			return nil, err
		}
		if !changed {
			continue
		}
		if len(kept) == 0 {
			hooks = slices.Delete(hooks, i, i+1)
			i--
			continue
		}
		hooks[i].val = rawList(kept)
	}
	for _, h := range Added(wires) {
		group := struct {
			Matcher string `json:"matcher,omitempty"`
			Hooks   []any  `json:"hooks"`
		}{Matcher: h.Matcher, Hooks: []any{hookEntry{Type: "command", Command: h.Command, Timeout: h.Timeout}}}
		var groups []json.RawMessage
		if raw, ok := hooks.get(h.Event); ok {
			if groups, err = hookGroups(h.Event, raw); err != nil {
				return nil, err
			}
		}
		b, err := marshalPlain(group)
		if err != nil {
			return nil, err
		}
		hooks.set(h.Event, rawList(append(groups, b)))
	}
	return render(old, top, hooks)
}

// render returns settings text for top with hooks as its "hooks" (taken
// out when empty), indented by two spaces; old itself when its JSON value
// is the same, or when both are empty.
func render(old []byte, top, hooks object) ([]byte, error) {
	if len(hooks) == 0 {
		top.remove("hooks")
	} else {
		raw, _ := hooks.MarshalJSON()
		top.set("hooks", raw)
	}
	if len(top) == 0 && len(bytes.TrimSpace(old)) == 0 {
		return old, nil
	}
	flat, _ := top.MarshalJSON()
	var out bytes.Buffer
	if err := json.Indent(&out, flat, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	// Unchanged content keeps the file as its owner wrote it.
	if len(old) > 0 && jsonEqual(old, out.Bytes()) {
		return old, nil
	}
	return out.Bytes(), nil
}

// jsonKind names the JSON type of the value raw begins with, as a
// sentence names it: "an object", "a list", "a string", "a number", "true
// or false", "null"; "" for what is not JSON.
func jsonKind(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return ""
	}
	switch c := t[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "a list"
	case c == '"':
		return "a string"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	case c == 't' || c == 'f':
		return "true or false"
	case c == 'n':
		return "null"
	}
	return ""
}

// parseSettings reads settings.json text b as Claude Code's settings
// (an object whose "hooks" member, when present, is an object of hook
// events) and returns the top object and its "hooks". Empty text is an
// empty object. The error says what is where and what was expected, in
// JSON's terms (the file's name is the caller's to add).
func parseSettings(b []byte) (top, hooks object, err error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil, nil
	}
	if !json.Valid(b) {
		var v any
		return nil, nil, jsonfault.Fault(b, json.Unmarshal(b, &v), "the settings")
	}
	if k := jsonKind(b); k != "an object" {
		return nil, nil, fmt.Errorf(`the file holds %s; want an object such as {"hooks": {...}}`, k)
	}
	if k, dup := jsonfault.DuplicateKey(b, false); dup {
		// Written back, the file would keep only the last of the two.
		return nil, nil, fmt.Errorf("key %q is given twice (Claude Code reads the last one); keep one and run again", k)
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %v", err)
	}
	raw, ok := top.get("hooks")
	if !ok || jsonKind(raw) == "null" {
		return top, nil, nil
	}
	if k := jsonKind(raw); k != "an object" {
		return nil, nil, fmt.Errorf(`"hooks" is %s; want an object of hook events such as {"PreToolUse": [...]}`, k)
	}
	if err := json.Unmarshal(raw, &hooks); err != nil {
		return nil, nil, fmt.Errorf(`"hooks": %v`, err)
	}
	return top, hooks, nil
}

// hookGroups returns the groups of hook event ev (raw: its value in
// "hooks"), each an object; null is none.
func hookGroups(ev string, raw json.RawMessage) ([]json.RawMessage, error) {
	if jsonKind(raw) == "null" {
		return nil, nil
	}
	if k := jsonKind(raw); k != "a list" {
		return nil, fmt.Errorf(`"hooks"."%s" is %s; want a list of hook groups such as [{"matcher": "*", "hooks": [...]}]`, ev, k)
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, fmt.Errorf(`"hooks"."%s": %v`, ev, err)
	}
	for i, g := range groups {
		if k := jsonKind(g); k != "an object" {
			return nil, fmt.Errorf(`"hooks"."%s"[%d] is %s; want a hook group such as {"matcher": "*", "hooks": [...]}`, ev, i, k)
		}
	}
	return groups, nil
}

// groupHooks returns the hooks of group i of event ev: its "hooks"
// member, a list of objects; ok false when the group has none.
func groupHooks(ev string, i int, obj object) (hs []json.RawMessage, ok bool, err error) {
	raw, ok := obj.get("hooks")
	if !ok || jsonKind(raw) == "null" {
		return nil, false, nil
	}
	if k := jsonKind(raw); k != "a list" {
		return nil, false, fmt.Errorf(`"hooks"."%s"[%d]."hooks" is %s; want a list of hooks such as [{"type": "command", "command": "..."}]`, ev, i, k)
	}
	if err := json.Unmarshal(raw, &hs); err != nil {
		return nil, false, fmt.Errorf(`"hooks"."%s"[%d]."hooks": %v`, ev, i, err)
	}
	for j, h := range hs {
		if k := jsonKind(h); k != "an object" {
			return nil, false, fmt.Errorf(`"hooks"."%s"[%d]."hooks"[%d] is %s; want a hook such as {"type": "command", "command": "..."}`, ev, i, j, k)
		}
	}
	return hs, true, nil
}

// hookCommandOf returns hook h's "command" when it is a string.
func hookCommandOf(h json.RawMessage) string {
	var c struct {
		Command json.RawMessage `json:"command"`
	}
	var cmd string
	if json.Unmarshal(h, &c) == nil && json.Unmarshal(c.Command, &cmd) == nil {
		return cmd
	}
	return ""
}

// withoutLogbook returns the groups of event ev with Logbook's hooks
// (IsLogbookHook with self) taken out of each, dropping a group left with none; changed reports
// whether any was.
func withoutLogbook(ev string, groups []json.RawMessage, self string) (kept []json.RawMessage, changed bool, err error) {
	for i, g := range groups {
		var obj object
		if err := json.Unmarshal(g, &obj); err != nil {
			return nil, false, fmt.Errorf(`"hooks"."%s"[%d]: %v`, ev, i, err)
		}
		hs, ok, err := groupHooks(ev, i, obj)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			kept = append(kept, g)
			continue
		}
		var left []json.RawMessage
		for _, h := range hs {
			if IsLogbookHook(hookCommandOf(h), self) {
				changed = true
				continue
			}
			left = append(left, h)
		}
		if len(left) == len(hs) {
			kept = append(kept, g)
			continue
		}
		if len(left) == 0 {
			continue
		}
		obj.set("hooks", rawList(left))
		g, _ = obj.MarshalJSON()
		kept = append(kept, g)
	}
	return kept, changed, nil
}

// rawList joins JSON values into a JSON list, as they are (json.Marshal
// would escape their <, > and &).
func rawList(vs []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// marshalPlain is json.Marshal without escaping <, > and &: a command
// line in settings.json reads as written.
func marshalPlain(v any) (json.RawMessage, error) {
	return jsonx.MarshalPlain(v)
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// object is a JSON object that keeps its keys in order, its values as
// they were written.
type object []member

type member struct {
	key string
	val json.RawMessage
}

func (o object) get(k string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == k {
			return m.val, true
		}
	}
	return nil, false
}

func (o *object) set(k string, v json.RawMessage) {
	for i := range *o {
		if (*o)[i].key == k {
			(*o)[i].val = v
			return
		}
	}
	*o = append(*o, member{k, v})
}

func (o *object) remove(k string) {
	*o = slices.DeleteFunc(*o, func(m member) bool { return m.key == k })
}

// UnmarshalJSON reads a JSON object, keeping its keys' order.
func (o *object) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("want an object, got %v", t)
	}
	*o = nil
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		o.set(t.(string), v)
	}
	_, err = dec.Token()
	return err
}

// MarshalJSON writes the object's keys in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MaxFileBytes is the largest settings file Logbook reads or edits:
// 16 MiB. Claude Code's settings are a few KiB; a larger file is not one
// to parse whole into memory.
const MaxFileBytes = 16 << 20

// ReadFile returns the contents of the settings file at target (a path
// Target resolved). Errors: fs.ErrNotExist when there is none (wrapped),
// a file over MaxFileBytes (naming its size), or a read error.
func ReadFile(target string) ([]byte, error) {
	f, err := os.Open(target)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		size := int64(len(b))
		if fi, err := f.Stat(); err == nil {
			size = fi.Size()
		}
		return nil, fmt.Errorf("%s: %d bytes, over %d: not a settings file Logbook reads or edits; move it aside", target, size, MaxFileBytes)
	}
	return b, nil
}

// HooksIn returns the Logbook hook commands (IsLogbookHook with self) in
// settings file path, by event, in the file's order; a file that does not
// exist has none (a nil map). A dangling symlink or a loop in its place
// is an error (Target), and so is a file that is not Claude Code's
// settings: that error names path and says how to fix it.
func HooksIn(path, self string) (map[string][]string, error) {
	target, err := Target(path)
	if err != nil {
		return nil, err
	}
	b, err := ReadFile(target)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	bad := func(err error) error {
		return fmt.Errorf("%s: %w; fix it, or move it aside and run `logbook hooks install`", path, err)
	}
	_, hooks, err := parseSettings(b)
	if err != nil {
		return nil, bad(err)
	}
	out := map[string][]string{}
	for _, m := range hooks {
		groups, err := hookGroups(m.key, m.val)
		if err != nil {
			return nil, bad(err)
		}
		for i, g := range groups {
			var obj object
			if err := json.Unmarshal(g, &obj); err != nil {
				return nil, bad(fmt.Errorf(`"hooks"."%s"[%d]: %v`, m.key, i, err))
			}
			hs, _, err := groupHooks(m.key, i, obj)
			if err != nil {
				return nil, bad(err)
			}
			for _, h := range hs {
				if c := hookCommandOf(h); IsLogbookHook(c, self) {
					out[m.key] = append(out[m.key], c)
				}
			}
		}
	}
	return out, nil
}

// Wiring is where one hook event is wired to Logbook: the Logbook
// commands wired to it in the user's settings and in the project's.
// Neither list is nil.
type Wiring struct {
	Event   string   `json:"event"`
	User    []string `json:"user"`    // Logbook's commands in the user's settings
	Project []string `json:"project"` // and in the project's (settings.json, settings.local.json)
}

// Status returns a Wiring for each event of Events, in order, from the
// user's settings file user and the project's files project (HooksIn,
// with self), and how many events neither wires. The first file that
// cannot be read or is not Claude Code's settings ends it with HooksIn's
// error.
func Status(user string, project []string, self string) (rows []Wiring, missing int, err error) {
	wired := func(paths ...string) (map[string][]string, error) {
		out := map[string][]string{}
		for _, p := range paths {
			m, err := HooksIn(p, self)
			if err != nil {
				return nil, err
			}
			for ev, cmds := range m {
				out[ev] = append(out[ev], cmds...)
			}
		}
		return out, nil
	}
	u, err := wired(user)
	if err != nil {
		return nil, 0, err
	}
	p, err := wired(project...)
	if err != nil {
		return nil, 0, err
	}
	events := Events()
	rows = make([]Wiring, 0, len(events))
	for _, ev := range events {
		r := Wiring{Event: ev, User: u[ev], Project: p[ev]}
		if r.User == nil {
			r.User = []string{}
		}
		if r.Project == nil {
			r.Project = []string{}
		}
		if len(r.User)+len(r.Project) == 0 {
			missing++
		}
		rows = append(rows, r)
	}
	return rows, missing, nil
}
