package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHook_MessagesRedacted: a payload refused for a field that quotes a
// secret (an id that is not an id, with a token of a built-in shape or
// of the data dir's own rule in it) gets messages, on stderr and in the
// gate's deny, that name the fault without the secret, from logbook and
// logbook-hook (real processes), gated or not, and from the Codex hook, with a server running or
// none (logbook-hook alone may spool a payload whose ids it does not
// check, for the server to refuse); the payload kept aside is there to
// look at.
func TestHook_MessagesRedacted(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	gh := "gh" + "p_" + "4Nd8fKq2ZbX9vLm3Qw7Rt1Yp6Hs0Jc5Ue2Ia"
	custom := "acme-" + "7731924"
	dir := installHookAs(t, "logbook-hook", "logbook")
	payloads := []string{
		`{"session_id":"a ` + gh + `","hook_event_name":"Stop"}`,
		`{"session_id":"a ` + custom + `","hook_event_name":"Stop"}`,
		`{"session_id":"a/` + gh + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"ls"}}`,
		`{"session_id":"s1","agent_id":"a/` + custom + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"ls"}}`,
		`{"session_id":"s1","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_use_id":"a b ` + gh + `","tool_input":{"command":"ls"}}`,
	}
	check := func(t *testing.T, data string) {
		for _, bin := range []string{"logbook", "logbook-hook"} {
			for _, args := range [][]string{{"claude"}, {"claude", "--gate", "--budget", "3s"}} {
				if bin == "logbook" {
					args = append([]string{"hook"}, args...)
				}
				for _, p := range payloads {
					out, errOut, _ := runHook(t, data, filepath.Join(dir, bin), p, args...)
					if errOut == "" && out == "" && (bin == "logbook" || len(args) > 1) {
						t.Errorf("%s %v %s: no message at all", bin, args, p)
					}
					for _, s := range []string{gh, custom} {
						if strings.Contains(out+errOut, s) {
							t.Errorf("%s %v: the secret %.10s… is in its messages:\nstdout %s\nstderr %s", bin, args, s, out, errOut)
						}
					}
				}
			}
		}
	}
	check = func(check func(t *testing.T, data string)) func(t *testing.T, data string) {
		return func(t *testing.T, data string) {
			check(t, data)
			// Codex's notify hook: the payload as its argument.
			for _, p := range []string{
				`{"type":"agent-turn-complete","thread-id":"a ` + gh + `","turn-id":"t1"}`,
				`{"type":"agent-turn-complete","thread-id":"t","turn-id":"a ` + custom + `"}`,
			} {
				out, errOut, _ := runHook(t, data, filepath.Join(dir, "logbook"), "", "hook", "codex", p)
				for _, s := range []string{gh, custom} {
					if strings.Contains(out+errOut, s) {
						t.Errorf("hook codex: the secret %.10s… is in its messages:\nstdout %s\nstderr %s", s, out, errOut)
					}
				}
			}
		}
	}(check)
	rules := map[string]string{"redact.txt": "acme-[0-9]{7}\n"}
	t.Run("no server", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, text := range rules {
			if err := os.WriteFile(filepath.Join(data, name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		check(t, data)
	})
	t.Run("logbook-hook alone", func(t *testing.T) {
		// No logbook beside it nor on $PATH: it keeps a refused payload
		// in the spool for serve to set aside, and prints the refusal
		// with every quoted value elided.
		alone := filepath.Join(installHookAs(t, "logbook-hook"), "logbook-hook")
		data := t.TempDir()
		if err := os.WriteFile(filepath.Join(data, "redact.txt"), []byte(rules["redact.txt"]), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range payloads[:2] {
			out, errOut, _ := runHook(t, data, alone, p, "claude")
			if !strings.Contains(errOut, "refused; kept in the spool") {
				t.Errorf("%s: stderr %s, want it kept in the spool", p, errOut)
			}
			for _, s := range []string{gh, custom} {
				if strings.Contains(out+errOut, s) {
					t.Errorf("logbook-hook alone: the secret %.10s… is in its messages:\nstdout %s\nstderr %s", s, out, errOut)
				}
			}
		}
	})
	t.Run("server", func(t *testing.T) {
		r := newGateRig(t, "5e551011-0000-4000-8000-0000000009c1", rules)
		check(t, r.data)
		if whys, _ := filepath.Glob(filepath.Join(r.data, "spool", "rejected", "*.why")); len(whys) == 0 {
			t.Errorf("no payload kept aside")
		}
	})
}

// TestHook_DataDirTypo: a hook whose --data names a directory that does
// not exist keeps the payload in a spool there (nothing lost, exit 0),
// and says so, naming the directory, from logbook and logbook-hook;
// once the directory is there it says nothing.
func TestHook_DataDirTypo(t *testing.T) {
	t.Parallel()
	dir := installHookAs(t, "logbook-hook", "logbook")
	for _, bin := range []string{"logbook", "logbook-hook"} {
		t.Run(bin, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "typo")
			args := []string{"--data", data, "claude"}
			if bin == "logbook" {
				args = append([]string{"hook"}, args...)
			}
			for i := range 2 {
				_, errOut, code := runHook(t, t.TempDir(), filepath.Join(dir, bin), `{"session_id":"s1","hook_event_name":"Stop"}`, args...)
				said := strings.Contains(errOut, "the data dir "+data+" did not exist") && strings.Contains(errOut, "is --data right?")
				if code != 0 || said != (i == 0) {
					t.Errorf("hook %d into %s: exit %d, stderr:\n%s", i+1, data, code, errOut)
				}
			}
			if es, err := os.ReadDir(filepath.Join(data, "spool")); err != nil || len(es) < 2 {
				t.Errorf("spool of %s: %d entries (%v), want both hooks kept", data, len(es), err)
			}
			// A --data that does not exist and cannot be made (a link to
			// nowhere: it does not exist, and mkdir finds the link there,
			// refused as root too, as a directory of another user's is
			// to anyone else) keeps nothing: the hook fails, exit 1, and
			// never says the payload is kept there.
			dangling := filepath.Join(t.TempDir(), "typo")
			if err := os.Symlink(filepath.Join(t.TempDir(), "gone", "x"), dangling); err != nil {
				t.Fatal(err)
			}
			args = []string{"--data", dangling, "claude"}
			if bin == "logbook" {
				args = append([]string{"hook"}, args...)
			}
			_, errOut, code := runHook(t, t.TempDir(), filepath.Join(dir, bin), `{"session_id":"s1","hook_event_name":"Stop"}`, args...)
			if code != 1 || strings.Contains(errOut, "kept in its spool") || !strings.Contains(errOut, dangling) {
				t.Errorf("hook into %s: exit %d, stderr:\n%s\nwant exit 1, an error naming it, and no word of a spool", dangling, code, errOut)
			}
			// An empty --data (a variable unset in the hook's command) is
			// refused, not taken for the default data dir.
			args = []string{"--data", "", "claude"}
			if bin == "logbook" {
				args = append([]string{"hook"}, args...)
			}
			home := t.TempDir()
			c := exec.Command(filepath.Join(dir, bin), args...)
			c.Env = []string{"PATH=" + t.TempDir(), "HOME=" + home}
			_, errOut, code, err := runCmd(c, `{"session_id":"s1","hook_event_name":"Stop"}`)
			if err != nil {
				t.Fatal(err)
			}
			if code == 0 || !strings.Contains(errOut, "--data is given empty") {
				t.Errorf("--data \"\": exit %d, stderr:\n%s", code, errOut)
			}
			if _, err := os.Stat(filepath.Join(home, ".local")); !os.IsNotExist(err) {
				t.Errorf("--data \"\" made something under HOME: %v", err)
			}
		})
	}
}
