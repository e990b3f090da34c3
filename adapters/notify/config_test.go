package notify_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/logbook-dev/logbook/adapters/internal/specialtest"
	"github.com/logbook-dev/logbook/adapters/notify"
)

const goodConfig = `# what Logbook tells whom
[sinks.desk]
type = "desktop"

[sinks.team]
type = "webhook"
url = "https://hooks.example.com/T0/B0"
format = "slack"
headers = { Authorization = "Bearer x" }
timeout = 5

[sinks.tab]
type = "board"

[[rule]]
on = "waiting"
after = 120
sinks = ["desk", "tab"]

[[rule]]
name = "reviews"
on = "review_pending"
sinks = ["team"]

[[rule]]
on = "command_failed"
sinks = ["team"]
`

func TestParse(t *testing.T) {
	t.Parallel()
	cfg, err := notify.Parse("notify.toml", []byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	want := notify.Config{
		Rules: []notify.Rule{
			{Name: "waiting", On: "waiting", After: 120 * time.Second, Sinks: []string{"desk", "tab"}, Line: 15},
			{Name: "reviews", On: "review_pending", After: notify.DefaultReviewAfter, Sinks: []string{"team"}, Line: 20},
			{Name: "command_failed", On: "command_failed", Sinks: []string{"team"}, Line: 25},
		},
		Sinks: map[string]notify.Sink{
			"desk": {Name: "desk", Type: "desktop", Timeout: notify.DefaultTimeout},
			"team": {Name: "team", Type: "webhook", URL: "https://hooks.example.com/T0/B0", Format: "slack",
				Headers: map[string]string{"Authorization": "Bearer x"}, Timeout: 5 * time.Second},
			"tab": {Name: "tab", Type: "board", Timeout: notify.DefaultTimeout},
		},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if got, want := cfg.Summary(), "rules waiting after 2m0s → desk, tab; reviews (review_pending) after 5s → team; command_failed → team; sinks desk (desktop), tab (board), team (webhook slack)"; got != want {
		t.Errorf("Summary:\n got %s\nwant %s", got, want)
	}
	spend, err := notify.Parse("notify.toml", []byte("[sinks.tab]\ntype = \"board\"\n[[rule]]\non = \"spend\"\nusd = 0.0001\nsinks = [\"tab\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spend.Summary(), "rules spend at $0.0001 → tab; sinks tab (board)"; got != want {
		t.Errorf("Summary:\n got %s\nwant %s", got, want)
	}
	empty, err := notify.Parse("notify.toml", nil)
	if err != nil || len(empty.Rules) != 0 {
		t.Errorf("empty file: %+v, %v", empty, err)
	}
}

func TestParse_Faults(t *testing.T) {
	t.Parallel()
	hook := "[sinks.h]\ntype = \"webhook\"\nurl = \"http://127.0.0.1:9/x\"\n"
	for _, tc := range []struct{ name, text, want string }{
		{"syntax", "[[rule]]\non = waiting\n", "notify.toml:2:6: not valid TOML"},
		{"byte order mark", "\uFEFF" + hook, "notify.toml:1:1: not valid TOML: the file starts with a UTF-8 byte order mark"},
		{"unknown key", hook + "[[rule]]\non = \"waiting\"\nsink = [\"h\"]\n", "notify.toml:6:1: unknown key rule.sink: want name, on, after, usd or sinks"},
		{"unknown sink key", "[sinks.h]\ntype = \"desktop\"\ncolour = 1\n", "notify.toml:3:1: unknown key sinks.h.colour"},
		{"wrong type", hook + "[[rule]]\non = \"waiting\"\nafter = \"2m\"\nsinks = [\"h\"]\n", "notify.toml:6:9: rule.after: want a whole number, not a string"},
		{"wrong type in a sink", hook + "timeout = \"5\"\n", "notify.toml:4:11: sinks.h.timeout: want a whole number, not a string"},
		{"unknown kind", hook + "[[rule]]\non = \"sleeping\"\nsinks = [\"h\"]\n", "notify.toml:5:1: rule 1: on \"sleeping\": want one of waiting, review_pending"},
		{"no kind", hook + "[[rule]]\nsinks = [\"h\"]\n", "notify.toml:4:1: rule 1: on missing"},
		{"no sinks", hook + "[[rule]]\non = \"waiting\"\n", "notify.toml:4:1: rule 1: sinks missing"},
		{"empty sinks", hook + "[[rule]]\non = \"waiting\"\nsinks = []\n", "notify.toml:6:1: rule 1: sinks is empty: name at least one sink"},
		{"empty sinks, indented", hook + "[[rule]]\non = \"waiting\"\n  sinks = [ ]\n", "notify.toml:6:3: rule 1: sinks is empty: name at least one sink"},
		{"undefined sink", hook + "[[rule]]\non = \"waiting\"\nsinks = [\"h\", \"desk\"]\n", "notify.toml:6:1: rule 1: sinks: \"desk\" (entry 2) is not a [sinks.desk] table"},
		{"twice", hook + "[[rule]]\non = \"waiting\"\nsinks = [\"h\", \"h\"]\n", "notify.toml:6:1: rule 1: sinks: \"h\" is named twice"},
		{"after on the wrong kind", hook + "[[rule]]\non = \"breaker_tripped\"\nafter = 3\nsinks = [\"h\"]\n", "notify.toml:6:1: rule 1: after: only a waiting or review_pending rule waits"},
		{"negative after", hook + "[[rule]]\non = \"waiting\"\nafter = -1\nsinks = [\"h\"]\n", "notify.toml:6:1: rule 1: after -1"},
		{"same name", hook + "[[rule]]\non = \"waiting\"\nsinks = [\"h\"]\n[[rule]]\non = \"waiting\"\nsinks = [\"h\"]\n", "notify.toml:7:1: rule 2: name \"waiting\" is taken"},
		{"bad name", hook + "[[rule]]\nname = \"Slow Wait\"\non = \"waiting\"\nsinks = [\"h\"]\n", "notify.toml:5:1: rule 1: name \"Slow Wait\""},
		{"spend without usd", hook + "[[rule]]\non = \"spend\"\nsinks = [\"h\"]\n", "notify.toml:5:1: rule 1: a spend rule needs usd"},
		{"usd on waiting", hook + "[[rule]]\non = \"waiting\"\nusd = 5\nsinks = [\"h\"]\n", "notify.toml:6:1: rule 1: usd: only a spend rule"},
		{"usd zero", hook + "[[rule]]\non = \"spend\"\nusd = 0\nsinks = [\"h\"]\n", "notify.toml:6:1: rule 1: usd 0: want dollars above 0"},
		{"no type", "[sinks.h]\nurl = \"http://x/\"\n", "notify.toml:1:1: sink h: type missing"},
		{"bad type", "[sinks.h]\ntype = \"pager\"\n", "notify.toml:2:1: sink h: type \"pager\": want desktop, webhook or board"},
		{"bad url", "[sinks.h]\ntype = \"webhook\"\nurl = \"ftp://x/\"\n", "notify.toml:3:1: sink h: url \"ftp://x/\": want an http or https URL"},
		{"no url", "[sinks.h]\ntype = \"webhook\"\n", "notify.toml:1:1: sink h: url \"\""},
		{"bad format", hook + "format = \"teams\"\n", "notify.toml:4:1: sink h: format \"teams\": want json, slack or ntfy"},
		{"url on desktop", "[sinks.d]\ntype = \"desktop\"\nurl = \"http://x/\"\n", "notify.toml:3:1: sink d: url is a webhook's"},
		{"bad timeout", hook + "timeout = 0\n", "notify.toml:4:1: sink h: timeout 0: want whole seconds from 1 to 60"},
		{"bad sink name", "[sinks.Desk]\ntype = \"desktop\"\n", "notify.toml:1:1: sink Desk: want a name"},
		{"bad header name", hook + "headers = { \"Bad Header\" = \"x\" }\n", "notify.toml:4:1: sink h: headers: \"Bad Header\" is not an HTTP header name"},
		{"header value with a line break", hook + "headers = { \"X-Token\" = \"x\\r\\nInjected: y\" }\n", "notify.toml:4:1: sink h: headers: the value of X-Token holds a control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := notify.Parse("notify.toml", []byte(tc.text))
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.text)
			}
			if _, ok := err.(*notify.ConfigError); !ok {
				t.Errorf("error %T, want *notify.ConfigError", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error:\n got %s\nwant %s…", err, tc.want)
			}
		})
	}
}

// TestWatch_KeepsLastGood: a file that stops parsing is said once and
// the last good config stays in force; a fix is taken; a removal turns
// notifications off.
func TestWatch_KeepsLastGood(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), notify.File)
	var mu sync.Mutex
	var said []string
	w := &notify.Watch{Path: path, Say: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		said = append(said, fmtLine(format, args...))
	}}
	if cfg, changed := w.Check(); cfg != nil || changed {
		t.Fatalf("no file: %v, %v", cfg, changed)
	}
	write := func(text string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		// A distinct stamp each write, however coarse the clock.
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	write(goodConfig, t0)
	cfg, changed := w.Check()
	if cfg == nil || !changed || len(cfg.Rules) != 3 {
		t.Fatalf("good file: %v, %v", cfg, changed)
	}
	write(goodConfig+"[[rule]]\non = \"nope\"\nsinks = [\"desk\"]\n", t0.Add(time.Second))
	if got, changed := w.Check(); got != cfg || changed {
		t.Errorf("broken file: config %p changed %v, want the last good %p kept", got, changed, cfg)
	}
	w.Check() // the same fault is not said again
	write(strings.Replace(goodConfig, "after = 120", "after = 30", 1), t0.Add(2*time.Second))
	fixed, changed := w.Check()
	if !changed || fixed.Rules[0].After != 30*time.Second {
		t.Errorf("fixed file: %+v, %v", fixed, changed)
	}
	os.Remove(path)
	if got, changed := w.Check(); got != nil || !changed {
		t.Errorf("removed file: %v, %v", got, changed)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 4 || !strings.HasPrefix(said[1], "ERROR: "+path+":29:1: rule 4: on \"nope\"") || !strings.Contains(said[1], "keeping the last good") || !strings.Contains(said[3], "removed") {
		t.Errorf("said:\n%s", strings.Join(said, "\n"))
	}
}

// TestParse_README: the README's notify.toml parses, with every rule kind
// and sink type in it.
func TestParse_README(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```toml\n# ~/.local/share/logbook/notify.toml\n")
	text, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README has no notify.toml example")
	}
	cfg, err := notify.Parse("README.md", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	kinds, types := map[string]bool{}, map[string]bool{}
	for _, r := range cfg.Rules {
		kinds[r.On] = true
	}
	for _, s := range cfg.Sinks {
		types[s.Type] = true
	}
	if len(kinds) != len(notify.Kinds) || len(types) != 3 {
		t.Errorf("the README's example shows rule kinds %v and sink types %v, want every one", kinds, types)
	}
}

// TestWatch_NotARegularFile: a FIFO, a device or a directory at
// notify.toml is refused at once, naming what it is, without a read that
// would block the watch (and serve's start) for good; a regular file
// put in its place later is taken up.
func TestWatch_NotARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range specialtest.Kinds {
		t.Run(tc.Name, func(t *testing.T) {
			path := filepath.Join(dir, tc.Name, notify.File)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tc.Make(path); err != nil {
				t.Fatal(err)
			}
			var said []string
			w := &notify.Watch{Path: path, Say: func(format string, args ...any) { said = append(said, fmtLine(format, args...)) }}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if cfg, _ := w.Check(); cfg != nil {
					t.Errorf("a config from %s", tc.Name)
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Check of %s has not returned after 10 s", tc.Name)
			}
			if len(said) != 1 || !strings.Contains(said[0], "ERROR: "+path+": not a regular file "+tc.Says) {
				t.Errorf("said: %q, want one ERROR naming %s", said, tc.Says)
			}
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(goodConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			if cfg, changed := w.Check(); cfg == nil || !changed {
				t.Errorf("the regular file put in its place: %v, %v", cfg, changed)
			}
		})
	}
}
