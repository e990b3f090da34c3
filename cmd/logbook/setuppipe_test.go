package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `logbook setup --yes --no-service | head -3`: the output is cut short,
// and setup still finishes what it started: the hooks it wired are
// recorded, so `setup --undo` takes them out again.
func TestSetup_OutputCutShort(t *testing.T) {
	t.Parallel()
	bin := soakBuild(t)
	root := t.TempDir()
	home, data := filepath.Join(root, "home"), filepath.Join(root, "data")
	if err := os.MkdirAll(filepath.Join(home, ".claude", "projects"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(root, "config"), "LOGBOOK_DATA="+data)
	c := exec.Command(bin, "setup", "--yes", "--no-service")
	c.Env = env
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	for range 3 {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	out.Close() // as head does once it has its lines
	if err := c.Wait(); err != nil {
		t.Errorf("setup with its output cut short: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "setup.json")); err != nil {
		t.Fatalf("setup with its output cut short recorded nothing for --undo: %v", err)
	}
	u := exec.Command(bin, "setup", "--undo", "--yes")
	u.Env = env
	b, err := u.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "setup is undone") {
		t.Fatalf("setup --undo: %v\n%s", err, b)
	}
	settings, _ := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
	if strings.Contains(string(settings), "logbook-hook") {
		t.Errorf("hooks left after --undo:\n%s", settings)
	}
}
