package locate

import (
	"path/filepath"
	"testing"
)

func TestPathPrecedence(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("LOGBOOK_DATA", "")
	t.Setenv("XDG_DATA_HOME", "")
	cases := []struct {
		name, flag, env, xdg, want string
	}{
		{"home", "", "", "", filepath.Join(home, ".local", "share", "logbook")},
		{"xdg", "", "", "/x", "/x/logbook"},
		{"env over xdg", "", "/e", "/x", "/e"},
		{"flag over all", "/f", "/e", "/x", "/f"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("LOGBOOK_DATA", c.env)
			t.Setenv("XDG_DATA_HOME", c.xdg)
			got, err := Path(c.flag)
			if err != nil || got != c.want {
				t.Fatalf("Path(%q) = %q, %v; want %q", c.flag, got, err, c.want)
			}
		})
	}
	t.Run("relative flag made absolute", func(t *testing.T) {
		t.Chdir(home)
		got, err := Path("d")
		if err != nil || got != filepath.Join(home, "d") {
			t.Fatalf("Path(d) = %q, %v", got, err)
		}
	})
}
