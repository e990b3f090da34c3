package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// fetchTimeout bounds `git fetch origin` during base resolution.
const fetchTimeout = 60 * time.Second

// git runs git with args in dir and returns its trimmed standard output.
// Its environment keeps git from asking for credentials; core.fsmonitor
// is switched off, so no program a repository's configuration names as
// its file-system monitor runs in this process (safeGit goes further,
// for the commands a check's fingerprint needs). The error names the
// command and carries git's standard error.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// TopLevel returns the top level of the git work tree that holds dir,
// symlinks resolved. The error says when dir is in no repository.
func TopLevel(ctx context.Context, dir string) (string, error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%s is not in a git repository (%v)", dir, err)
	}
	return filepath.EvalSymlinks(top)
}

// CheckProject returns dir, absolute and with symlinks resolved, if it is
// the top level of a git repository's main work tree; otherwise an error
// saying what it is instead.
func CheckProject(ctx context.Context, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("project %s: %w", dir, err)
	}
	top, err := TopLevel(ctx, real)
	if err != nil {
		return "", fmt.Errorf("project %s: not a git repository: workspaces need the top level of one", real)
	}
	if top != real {
		return "", fmt.Errorf("project %s: a subdirectory of the git repository %s: give its top level", real, top)
	}
	common, err := git(ctx, real, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("project %s: %w", real, err)
	}
	if gd, _ := git(ctx, real, "rev-parse", "--path-format=absolute", "--git-dir"); gd != common {
		return "", fmt.Errorf("project %s: a linked worktree of %s: give the repository's main work tree", real, filepath.Dir(common))
	}
	return real, nil
}

// Trunk returns the branch workspaces fork from: origin's HEAD branch
// when origin names one, else "main" or "master" when such a local branch
// exists, else the branch the project has checked out.
func Trunk(ctx context.Context, project string) (string, error) {
	if ref, err := git(ctx, project, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"); err == nil {
		if b, ok := strings.CutPrefix(ref, "origin/"); ok && b != "" {
			return b, nil
		}
	}
	for _, b := range []string{"main", "master"} {
		if _, err := git(ctx, project, "rev-parse", "--verify", "--quiet", "refs/heads/"+b); err == nil {
			return b, nil
		}
	}
	b, err := git(ctx, project, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil || b == "" {
		return "", fmt.Errorf("project %s: no trunk: no origin HEAD, no main or master, and HEAD is detached", project)
	}
	return b, nil
}

// Base is a resolved base commit.
type Base struct {
	Ref      string // what was resolved: "origin/main", "main", or the ref asked for
	Commit   string // 40 hex digits
	Fetched  bool   // origin was fetched first
	Fallback string // why the local trunk was used instead of origin/<trunk>
}

// ResolveBase finds the commit a new workspace of project forks from.
// With asked "" it fetches origin and takes origin/<trunk>, falling back
// to the local trunk when there is no origin or it cannot be reached; an
// asked ref is resolved exactly, and an unknown one is an error naming
// it. Fetching updates only remote-tracking refs: the project's work
// tree, HEAD and branches are never touched.
func ResolveBase(ctx context.Context, project, trunk, asked string) (Base, error) {
	if asked != "" {
		c, err := git(ctx, project, "rev-parse", "--verify", "--quiet", "--end-of-options", asked+"^{commit}")
		if err != nil || c == "" {
			return Base{}, fmt.Errorf("unknown base ref %q in %s", asked, project)
		}
		return Base{Ref: asked, Commit: c}, nil
	}
	var b Base
	if url, err := git(ctx, project, "remote", "get-url", "origin"); err != nil || url == "" {
		b.Fallback = "no origin remote"
	} else {
		fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		_, err := git(fctx, project, "fetch", "--quiet", "--no-tags", "origin", "+refs/heads/"+trunk+":refs/remotes/origin/"+trunk)
		cancel()
		if err != nil {
			b.Fallback = "origin unreachable: " + firstLine(err.Error())
		} else {
			b.Fetched = true
		}
	}
	if b.Fetched {
		if c, err := git(ctx, project, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+trunk+"^{commit}"); err == nil {
			b.Ref, b.Commit = "origin/"+trunk, c
			return b, nil
		}
		b.Fallback = "origin has no " + trunk
	} else if c, err := git(ctx, project, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+trunk+"^{commit}"); err == nil && b.Fallback != "no origin remote" {
		// Origin unreachable: its last known trunk is still origin's.
		b.Ref, b.Commit = "origin/"+trunk, c
		return b, nil
	}
	c, err := git(ctx, project, "rev-parse", "--verify", "--quiet", "refs/heads/"+trunk+"^{commit}")
	if err != nil || c == "" {
		return Base{}, fmt.Errorf("no base: %s and no local branch %s in %s", b.Fallback, trunk, project)
	}
	b.Ref, b.Commit = trunk, c
	return b, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// worktreeEntry is one record of `git worktree list --porcelain`.
type worktreeEntry struct {
	Path, Head, Branch string
}

// worktrees lists the project's worktrees as git knows them.
func worktrees(ctx context.Context, project string) ([]worktreeEntry, error) {
	out, err := git(ctx, project, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var list []worktreeEntry
	var cur *worktreeEntry
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "worktree":
			list = append(list, worktreeEntry{Path: v})
			cur = &list[len(list)-1]
		case "HEAD":
			if cur != nil {
				cur.Head = v
			}
		case "branch":
			if cur != nil {
				cur.Branch = strings.TrimPrefix(v, "refs/heads/")
			}
		}
	}
	return list, sc.Err()
}

// findWorktree returns git's record of the worktree at path, if any.
func findWorktree(ctx context.Context, project, path string) (worktreeEntry, bool, error) {
	list, err := worktrees(ctx, project)
	if err != nil {
		return worktreeEntry{}, false, err
	}
	for _, w := range list {
		if w.Path == path {
			return w, true, nil
		}
	}
	return worktreeEntry{}, false, nil
}

// branchExists reports whether refs/heads/<branch> exists in project.
func branchExists(ctx context.Context, project, branch string) bool {
	_, err := git(ctx, project, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// verifyWorktree checks git's answer after `git worktree add`: a worktree
// at exactly path, on branch, of project's repository.
func verifyWorktree(ctx context.Context, project, path, branch string) (worktreeEntry, error) {
	w, ok, err := findWorktree(ctx, project, path)
	if err != nil {
		return w, err
	}
	if !ok {
		return w, fmt.Errorf("git lists no worktree at %s", path)
	}
	if w.Branch != branch {
		return w, fmt.Errorf("the worktree at %s is on branch %q, not %s", path, w.Branch, branch)
	}
	want, err := git(ctx, project, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return w, err
	}
	got, err := git(ctx, path, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return w, err
	}
	if got != want {
		return w, fmt.Errorf("the worktree at %s belongs to repository %s, not %s", path, got, want)
	}
	top, err := TopLevel(ctx, path)
	if err != nil || top != path {
		return w, fmt.Errorf("the worktree's top level is %q, not %s", top, path)
	}
	return w, nil
}

// Change is one changed file of a workspace.
type Change struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`   // lines added; 0 for a binary file
	Removed int    `json:"removed"` // lines removed; 0 for a binary file
	Binary  bool   `json:"binary,omitempty"`
	New     bool   `json:"new,omitempty"` // untracked: not yet added to git
}

// Changes is what changed in a workspace against its merge base.
type Changes struct {
	Against   string   `json:"against"`    // the ref measured against: origin/<trunk> or <trunk>
	MergeBase string   `json:"merge_base"` // the merge base commit
	Files     []Change `json:"files"`
	Added     int      `json:"added"`
	Removed   int      `json:"removed"`
}

// ChangesOf measures what changed in the worktree at path (committed,
// staged, unstaged and untracked, ignored files left out) against its
// merge base with origin/<trunk>, or with the local trunk when the
// repository has no origin/<trunk>.
func ChangesOf(ctx context.Context, path, trunk string) (Changes, error) {
	against := "origin/" + trunk
	if _, err := git(ctx, path, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+trunk); err != nil {
		against = trunk
	}
	mb, err := git(ctx, path, "merge-base", "HEAD", against)
	if err != nil {
		return Changes{}, fmt.Errorf("changes of %s: %w", path, err)
	}
	out, err := git(ctx, path, "diff", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", mb)
	if err != nil {
		return Changes{}, fmt.Errorf("changes of %s: %w", path, err)
	}
	ch := Changes{Against: against, MergeBase: mb, Files: []Change{}}
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		c := Change{Path: parts[2]}
		if parts[0] == "-" {
			c.Binary = true
		} else {
			c.Added, _ = strconv.Atoi(parts[0])
			c.Removed, _ = strconv.Atoi(parts[1])
		}
		ch.Files = append(ch.Files, c)
	}
	untracked, err := git(ctx, path, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return Changes{}, fmt.Errorf("changes of %s: %w", path, err)
	}
	for _, f := range strings.Split(untracked, "\x00") {
		if f == "" {
			continue
		}
		c := Change{Path: f, New: true}
		b, err := os.ReadFile(filepath.Join(path, f))
		if err == nil {
			if bytes.IndexByte(b, 0) >= 0 {
				c.Binary = true
			} else {
				c.Added = bytes.Count(b, []byte{'\n'})
				if len(b) > 0 && b[len(b)-1] != '\n' {
					c.Added++
				}
			}
		}
		ch.Files = append(ch.Files, c)
	}
	for _, c := range ch.Files {
		ch.Added += c.Added
		ch.Removed += c.Removed
	}
	return ch, nil
}

// removeWorktree removes the worktree at path and its folder, then prunes
// git's records of worktrees whose folder is gone (one deleted by hand).
// The branch stays. It returns the step that failed.
func removeWorktree(ctx context.Context, project, path string) (string, error) {
	if _, ok, err := findWorktree(ctx, project, path); err != nil {
		return "worktree", err
	} else if ok {
		if _, err := os.Stat(path); err == nil {
			if _, err := git(ctx, project, "worktree", "remove", "--force", path); err != nil {
				return "worktree", err
			}
		}
	}
	if err := os.RemoveAll(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "folder", err
	}
	if _, err := git(ctx, project, "worktree", "prune"); err != nil {
		return "worktree", err
	}
	return "", nil
}
