package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureDocPaths keeps docs/architecture.md true to the tree:
// every backquoted path in it (`adapters/ingest`, `events/execute.go`)
// must exist in the repository. A span is a path when it is made of
// letters, digits, '_', '.' and '-' around at least one slash; a span
// with a placeholder (`lb.out.<id>`), a leading slash (/v1/stream), a
// home directory or a space is not one. A name that only looks like a
// path (a Pebble key, a file in the data dir) is written with a
// placeholder or without backquotes.
func TestArchitectureDocPaths(t *testing.T) {
	const root = "../.."
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	span := regexp.MustCompile("`([^`\n]+)`")
	pathLike := regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+/?$`)
	checked := 0
	for i, line := range strings.Split(string(doc), "\n") {
		for _, m := range span.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if !pathLike.MatchString(p) {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				t.Errorf("docs/architecture.md:%d: `%s` does not exist in the repository", i+1, p)
			}
		}
	}
	if checked < 20 {
		t.Errorf("docs/architecture.md names %d paths; the test no longer reads them", checked)
	}
}
