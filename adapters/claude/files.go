package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/logbook-dev/logbook/adapters/ingest"
)

// Transcript is one session transcript and its subagents' transcripts.
type Transcript struct {
	// Path is the transcript file, "" when only its subagents' files were
	// found (the parent file is missing or was not among the inputs).
	Path string
	// SessionID is the transcript file's base name without ".jsonl",
	// which Claude Code names after the session id.
	SessionID string
	Subagents []Subagent // sorted by Path
	// Pinned keeps SessionID even where the file is not named after a
	// session and its lines carry a sessionId: a watched file keeps the
	// session its first import chose (a copy read while it was being
	// written may have shown no sessionId yet), so one file is one
	// session.
	Pinned bool
}

// Subagent is one subagent transcript, subagents/agent-<id>.jsonl.
type Subagent struct {
	Path string
	// AgentID is <id> from the file name agent-<id>.jsonl, or, for a file
	// named otherwise, the agentId of its first line that has one.
	AgentID string
	// SessionID is the parent transcript's session id.
	SessionID string
}

// Discover finds Claude Code transcripts under paths: each path is a
// .jsonl file or a directory walked recursively (such as
// ~/.claude/projects). Files not ending in ".jsonl" are skipped.
//
// A file in a directory named "subagents" is a subagent transcript. It
// belongs to the session whose directory holds that subagents directory:
// <dir>/<session-id>/subagents/agent-<id>.jsonl belongs to
// <dir>/<session-id>.jsonl, Claude Code's layout; failing that, to the
// only transcript in the directory holding subagents/ (a copied session
// whose transcript sits beside its subagents directory). The subagents of
// a transcript given as a file are found the same way even when not listed.
//
// The result is sorted by Path, then SessionID; it has no duplicates.
// Errors name the path that failed (a missing input, an unreadable
// directory named); directories below a path that cannot be read are
// walked past and named in an *ingest.UnreadableDirs returned beside
// what was found.
func Discover(paths ...string) ([]Transcript, error) {
	files := map[string]bool{}
	var unreadable []string // directories below a path that cannot be read
	for _, p := range paths {
		p = filepath.Clean(p)
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("discover transcripts: %w", err)
		}
		if !st.IsDir() {
			if strings.HasSuffix(p, ".jsonl") {
				files[p] = true
			}
			continue
		}
		// A symlinked root (a linked ~/.claude, say) is walked where it
		// points; links inside the tree are followed to files only, so a
		// loop of linked directories cannot trap the walk.
		root := p
		if r, err := filepath.EvalSymlinks(p); err == nil {
			root = r
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			named := path
			if rel, err := filepath.Rel(root, path); err == nil {
				named = filepath.Join(p, rel) // named as the caller named the root
			}
			if err := ingest.SkipUnreadable(root, path, named, d, err, &unreadable); err != nil {
				return err
			}
			path = named
			if !strings.HasSuffix(path, ".jsonl") {
				return nil
			}
			switch {
			case d.Type().IsRegular():
				files[path] = true
			case d.Type()&fs.ModeSymlink != 0:
				// A link to a FIFO or a device too, and one that loops or
				// dangles: its read names it, rather than it being skipped
				// unsaid.
				if st, err := os.Stat(path); err != nil || !st.IsDir() {
					files[path] = true
				}
			case !d.IsDir():
				// A FIFO, a device or a socket named .jsonl: kept, so
				// that its import refuses it naming it, rather than the
				// folder seeming to hold no transcript.
				files[path] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("discover transcripts: %w", err)
		}
	}
	d := discovery{byPath: map[string]*Transcript{}, only: map[string]string{}}
	for p := range files {
		if !isSubagentFile(p) {
			d.byPath[p] = &Transcript{Path: p, SessionID: sessionID(p)}
		}
	}
	// Subagents of transcripts given as files, which no walk listed.
	for p := range d.byPath {
		for _, dir := range []string{strings.TrimSuffix(p, ".jsonl"), filepath.Dir(p)} {
			sub := filepath.Join(dir, "subagents")
			ents, err := os.ReadDir(sub)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("discover transcripts: %w", err)
			}
			for _, e := range ents {
				if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") {
					files[filepath.Join(sub, e.Name())] = true
				}
			}
		}
	}
	for p := range files {
		if !isSubagentFile(p) {
			continue
		}
		parent, err := d.parent(p)
		if err != nil {
			return nil, err
		}
		id, err := agentID(p)
		if err != nil {
			return nil, err
		}
		parent.Subagents = append(parent.Subagents, Subagent{Path: p, AgentID: id, SessionID: parent.SessionID})
	}
	out := make([]Transcript, 0, len(d.byPath)+len(d.orphans))
	for _, t := range d.byPath {
		out = append(out, *t)
	}
	for _, t := range d.orphans {
		out = append(out, *t)
	}
	for i := range out {
		sort.Slice(out[i].Subagents, func(a, b int) bool { return out[i].Subagents[a].Path < out[i].Subagents[b].Path })
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Path != out[b].Path {
			return out[a].Path < out[b].Path
		}
		return out[a].SessionID < out[b].SessionID
	})
	if len(unreadable) > 0 {
		return out, &ingest.UnreadableDirs{Notes: unreadable}
	}
	return out, nil
}

// discovery links subagent files to their transcripts.
type discovery struct {
	byPath  map[string]*Transcript // transcripts by file path
	orphans map[string]*Transcript // subagents without a transcript, by session directory
	only    map[string]string      // directory → its only transcript ("" if none or several)
}

// parent returns the transcript a subagent file belongs to, creating an
// entry without Path when its transcript is missing or not an input.
func (d *discovery) parent(p string) (*Transcript, error) {
	dir := filepath.Dir(filepath.Dir(p)) // <dir>/<session-id> or the copied session's directory
	if t, ok := d.byPath[dir+".jsonl"]; ok {
		return t, nil
	}
	if _, err := os.Stat(dir + ".jsonl"); err == nil {
		// The transcript exists but was not among the inputs: keep the
		// subagent linked to its session id all the same.
		return d.orphan(dir, sessionID(dir+".jsonl")), nil
	}
	only, err := d.onlyTranscript(dir)
	if err != nil {
		return nil, err
	}
	if only != "" {
		if t, ok := d.byPath[only]; ok {
			return t, nil
		}
		return d.orphan(dir, sessionID(only)), nil
	}
	return d.orphan(dir, filepath.Base(dir)), nil
}

func (d *discovery) orphan(dir, session string) *Transcript {
	if d.orphans == nil {
		d.orphans = map[string]*Transcript{}
	}
	t, ok := d.orphans[dir]
	if !ok {
		t = &Transcript{SessionID: session}
		d.orphans[dir] = t
	}
	return t
}

// onlyTranscript returns the only .jsonl file directly in dir, or "".
func (d *discovery) onlyTranscript(dir string) (string, error) {
	if p, ok := d.only[dir]; ok {
		return p, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("discover transcripts: %w", err)
	}
	only := ""
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".jsonl") {
			if only != "" {
				only = ""
				break
			}
			only = filepath.Join(dir, e.Name())
		}
	}
	d.only[dir] = only
	return only, nil
}

func isSubagentFile(p string) bool { return filepath.Base(filepath.Dir(p)) == "subagents" }

func sessionID(p string) string { return strings.TrimSuffix(filepath.Base(p), ".jsonl") }

// agentID returns the subagent id of the file at p: from its name
// agent-<id>.jsonl, else from the agentId of its first lines.
func agentID(p string) (string, error) {
	base := strings.TrimSuffix(filepath.Base(p), ".jsonl")
	if id, ok := strings.CutPrefix(base, "agent-"); ok && id != "" {
		return id, nil
	}
	for l, err := range ingest.ReadLines(p, 0) {
		if err != nil {
			if _, ok := errors.AsType[*LineError](err); ok {
				continue
			}
			return "", fmt.Errorf("discover transcripts: %w", err)
		}
		if l.Torn || l.N > 16 {
			break
		}
		var v struct {
			AgentID string `json:"agentId"`
		}
		if json.Unmarshal(l.Bytes, &v) == nil && v.AgentID != "" {
			return v.AgentID, nil
		}
	}
	return "", nil
}

// ImportFormat is Claude Code's format for ingest.PlanImport: a unit is
// a session's transcript with its subagents' transcripts, imported into
// the session the transcript names (Ingester.ImportTranscript).
func ImportFormat() ingest.Format[Transcript] {
	return ingest.Format[Transcript]{
		Noun: "transcript", What: "a Claude Code transcript", Ext: ".jsonl", Hint: " (a .jsonl file, as under ~/.claude/projects)",
		NotOne: "not a Claude Code transcript: ", Looks: LooksLikeTranscript,
		Discover: func(paths []string) ([]Transcript, error) { return Discover(paths...) },
		File:     func(t Transcript) (string, bool) { return t.Path, len(t.Subagents) == 0 },
		Files: func(t Transcript) []string {
			paths := make([]string, len(t.Subagents))
			for i, sa := range t.Subagents {
				paths[i] = sa.Path
			}
			return paths
		},
		EmptyDirs: "Claude Code transcripts (.jsonl files)",
	}
}
