package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadConfig_OnlyARegularFile: a workspace config that is a FIFO, a
// link to /dev/zero or to another file, sits behind a linked .logbook, or
// is over the limit is refused at once with an error naming the file and
// what it is; one that is missing is no config; a regular one is read.
func TestLoadConfig_OnlyARegularFile(t *testing.T) {
	t.Parallel()
	elsewhere := filepath.Join(t.TempDir(), "other.toml")
	write(t, elsewhere, "check = \"true\"\n")
	for _, tc := range []struct {
		name string
		make func(dir string)
		want string // "" for no error
	}{
		{"missing", func(string) {}, ""},
		{"regular", func(dir string) { write(t, filepath.Join(dir, ConfigFile), "check = \"true\"\n") }, ""},
		{"fifo", func(dir string) {
			os.MkdirAll(filepath.Join(dir, ".logbook"), 0o755)
			if err := syscall.Mkfifo(filepath.Join(dir, ConfigFile), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a FIFO)"},
		{"link to a device", func(dir string) {
			os.MkdirAll(filepath.Join(dir, ".logbook"), 0o755)
			os.Symlink("/dev/zero", filepath.Join(dir, ConfigFile))
		}, "a symbolic link"},
		{"link to a file", func(dir string) {
			os.MkdirAll(filepath.Join(dir, ".logbook"), 0o755)
			os.Symlink(elsewhere, filepath.Join(dir, ConfigFile))
		}, "a symbolic link"},
		{"linked .logbook", func(dir string) {
			os.Symlink(filepath.Dir(elsewhere), filepath.Join(dir, ".logbook"))
		}, ".logbook is a symbolic link"},
		{"huge", func(dir string) {
			write(t, filepath.Join(dir, ConfigFile), "# "+strings.Repeat("x", MaxConfigFile)+"\n")
		}, "over the limit of 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.make(dir)
			c, err := LoadConfig(dir)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Join(dir, ConfigFile))):
				t.Fatalf("error %v, want one naming the file and %q", err, tc.want)
			case tc.name == "regular" && c.Check != "true":
				t.Fatalf("config %+v", c)
			}
		})
	}
}
