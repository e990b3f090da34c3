package gate

import "testing"

// TestDecide_WrappersRunTheirCommand: a program whose arguments are a
// command line it runs (flock FILE CMD, unshare, strace, fakeroot,
// systemd-run, …) is read as running that command, so a deny rule meets
// it through the wrapper, past the wrapper's own options.
func TestDecide_WrappersRunTheirCommand(t *testing.T) {
	decideRows(t, blanketPolicies(t), []bypassRow{
		{"flock/file", `flock /tmp/l rm -rf /x`, "deny"},
		{"flock/opts", `flock -w 5 -x /tmp/l rm -rf /x`, "deny"},
		{"flock/fd-c", `flock /tmp/l -c 'rm -rf /x'`, "deny"},
		{"unshare", `unshare rm -rf /x`, "deny"},
		{"unshare/opts", `unshare -r --mount -S 0 rm -rf /x`, "deny"},
		{"strace", `strace rm -rf /x`, "deny"},
		{"strace/opts", `strace -f -o /tmp/t -e trace=file rm -rf /x`, "deny"},
		{"ltrace", `ltrace -s 80 rm -rf /x`, "deny"},
		{"fakeroot", `fakeroot rm -rf /x`, "deny"},
		{"fakeroot/dash-dash", `fakeroot -i /tmp/s -- rm -rf /x`, "deny"},
		{"systemd-run", `systemd-run rm -rf /x`, "deny"},
		{"systemd-run/opts", `systemd-run --user -p MemoryMax=1G --unit u rm -rf /x`, "deny"},
		{"nsenter", `nsenter -t 1 -m rm -rf /x`, "deny"},
		{"setpriv", `setpriv --reuid 1000 rm -rf /x`, "deny"},
		{"valgrind", `valgrind --tool=memcheck rm -rf /x`, "deny"},
		{"catchsegv", `catchsegv rm -rf /x`, "deny"},
		{"firejail", `firejail --quiet rm -rf /x`, "deny"},
		{"proot", `proot -r / rm -rf /x`, "deny"},
		{"bwrap", `bwrap --bind / / --dev /dev rm -rf /x`, "deny"},
		{"ionice", `ionice -c 3 rm -rf /x`, "deny"},
		{"chrt", `chrt -f 10 rm -rf /x`, "deny"},
		{"nested", `nice flock /tmp/l strace -f unshare rm -rf /x`, "deny"},
		{"runuser/user", `runuser -u root -- rm -rf /x`, "deny"},
		{"script/cluster", `script -qc 'rm -rf /x' /dev/null`, "deny"},
		{"su/cluster", `su -lc 'rm -rf /x' root`, "deny"},
		{"plain/flock", `flock /tmp/l ls`, "allow"},
		{"plain/strace", `strace -c ls`, "allow"},
		{"plain/unshare", `unshare -r id`, "allow"},
	})
}
