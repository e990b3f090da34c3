package settings

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/logbook-dev/logbook/adapters/claude"
)

// Hook is one hook entry as Edit adds it to settings.json: in a group of
// its own under hook event Event, with matcher Matcher ("*" for tool
// events, "" for none), running Command with Timeout seconds (0: none,
// Claude Code's default).
type Hook struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

// Added returns the hook entries Edit adds for wires: one per event of
// Events, in that order, running wires.Gate (with wires.Timeout) for the
// events the gate answers when it is set, else wires.Recorder. The zero
// Wires adds none (nil). The slice is the caller's.
func Added(wires Wires) []Hook {
	if wires.Recorder == "" {
		return nil
	}
	var out []Hook
	for _, ev := range Events() {
		h := Hook{Event: ev, Command: wires.Recorder}
		if wires.Gated(ev) {
			h.Command, h.Timeout = wires.Gate, wires.Timeout
		}
		if claude.ToolHookEvent(ev) {
			h.Matcher = "*"
		}
		out = append(out, h)
	}
	return out
}

// Remove returns settings.json text old with each of hooks taken out
// once, as Edit added it: the first entry under its event, in a group
// with its matcher, whose members are exactly "type": "command", its
// "command" and, when it has one, its "timeout". A group left with no
// hook, an event left with no group and a "hooks" left empty are removed;
// everything else is kept as Edit keeps it, and text whose JSON value is
// unchanged is returned as it is (old itself). missing lists the hooks
// not found so (taken out, or changed, since): those are left alone. The
// error is Edit's for text that is not Claude Code's settings; the file's
// name is the caller's to add. old is not modified.
func Remove(old []byte, hooks []Hook) (out []byte, missing []Hook, err error) {
	top, evs, err := parseSettings(old)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range hooks {
		raw, ok := evs.get(h.Event)
		if !ok {
			missing = append(missing, h)
			continue
		}
		groups, err := hookGroups(h.Event, raw)
		if err != nil {
			return nil, nil, err
		}
		groups, found, err := removeHook(groups, h)
		if err != nil {
			return nil, nil, err
		}
		if !found {
			missing = append(missing, h)
			continue
		}
		if len(groups) == 0 {
			evs.remove(h.Event)
		} else {
			evs.set(h.Event, rawList(groups))
		}
	}
	if len(missing) == len(hooks) {
		return old, missing, nil
	}
	out, err = render(old, top, evs)
	return out, missing, err
}

// removeHook takes hook h out of the first group of groups (the groups
// of h.Event) that has it as Edit writes it, dropping the group when it
// is left with none; found reports whether one had it.
func removeHook(groups []json.RawMessage, h Hook) (out []json.RawMessage, found bool, err error) {
	for i, g := range groups {
		var obj object
		if err := json.Unmarshal(g, &obj); err != nil {
			return nil, false, err
		}
		if matcherOf(obj) != h.Matcher {
			continue
		}
		hs, ok, err := groupHooks(h.Event, i, obj)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		j := slices.IndexFunc(hs, func(e json.RawMessage) bool { return isEntry(e, h) })
		if j < 0 {
			continue
		}
		hs = slices.Delete(hs, j, j+1)
		if len(hs) == 0 {
			return slices.Delete(groups, i, i+1), true, nil
		}
		obj.set("hooks", rawList(hs))
		groups[i], _ = obj.MarshalJSON()
		return groups, true, nil
	}
	return groups, false, nil
}

// matcherOf returns a group's "matcher" when it is a string, "" when it
// has none.
func matcherOf(group object) string {
	raw, ok := group.get("matcher")
	if !ok {
		return ""
	}
	var m string
	if json.Unmarshal(raw, &m) != nil {
		return "\x00" // not a string: no hook of Edit's
	}
	return m
}

// isEntry reports whether hook entry e is h as Edit writes it: "type"
// "command", h's command and h's timeout (absent when 0), and no other
// member.
func isEntry(e json.RawMessage, h Hook) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(e, &m) != nil {
		return false
	}
	want := []string{"command", "type"}
	if h.Timeout != 0 {
		want = []string{"command", "timeout", "type"}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(m)), want) {
		return false
	}
	var typ, cmd string
	if json.Unmarshal(m["type"], &typ) != nil || json.Unmarshal(m["command"], &cmd) != nil {
		return false
	}
	if typ != "command" || cmd != h.Command {
		return false
	}
	if h.Timeout != 0 {
		var t json.Number
		d := json.NewDecoder(bytes.NewReader(m["timeout"]))
		d.UseNumber()
		if d.Decode(&t) != nil || t.String() != jsonInt(h.Timeout) {
			return false
		}
	}
	return true
}

// jsonInt returns n as JSON writes it.
func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
