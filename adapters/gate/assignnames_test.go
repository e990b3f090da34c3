package gate

import "testing"

// assignNamesPolicy allows the builtins that assign a variable by its
// name, and ls, so that only the gate's own reading can refuse them.
const assignNamesPolicy = `
allow = ["Bash(printf:*)", "Bash(ls:*)", "Bash(read:*)", "Bash(mapfile:*)", "Bash(readarray:*)",
         "Bash(getopts:*)", "Bash(wait:*)", "Bash(unset:*)", "Bash(compgen:*)", "Bash(let:*)",
         "Bash(declare:*)", "Bash(typeset:*)", "Bash(local:*)", "Bash(export:*)", "Bash(readonly:*)"]
`

// TestDecide_BuiltinsThatAssignByName: a builtin that gives a variable
// a value by its name (printf -v, read, mapfile, getopts, wait -p,
// compgen -V, a nameref of declare -n, unset) is an assignment to that
// name: for PATH, LD_*, BASH*, HOME and the other names whose value
// changes what code runs, never allowed by a pattern, in every spelling
// bash takes (a cluster, quotes, a subscript, after --); one whose name
// is known only when it runs may be any of them.
func TestDecide_BuiltinsThatAssignByName(t *testing.T) {
	pols := dataDirPolicies(t, assignNamesPolicy)
	decideRows(t, pols, []bypassRow{
		{"printf/path", `printf -v PATH /tmp/evil; ls`, ""},
		{"printf/cluster", `printf -vPATH /tmp/evil; ls`, ""},
		{"printf/ld-preload", `printf -v LD_PRELOAD /tmp/x.so; ls`, ""},
		{"printf/bash-env", `printf -v BASH_ENV /tmp/x`, ""},
		{"printf/quoted", `printf -v 'PATH' /tmp/evil; ls`, ""},
		{"printf/dquoted-cluster", `printf "-vPATH" /tmp/evil; ls`, ""},
		{"printf/escaped", `printf -v P\ATH /tmp/evil; ls`, ""},
		{"printf/subscript", `printf -v 'PATH[0]' /tmp/evil; ls`, ""},
		{"printf/second-v", `printf -v x -v PATH /tmp/evil; ls`, ""},
		{"printf/dash-dash", `printf -v PATH -- /tmp/evil; ls`, ""},
		{"printf/home", `printf -v HOME /tmp/h; ls`, ""},
		{"printf/git", `printf -v GIT_DIR /tmp/g; ls`, ""},
		{"printf/editor", `printf -v EDITOR 'rm -rf /x'; ls`, ""},
		{"printf/xdg", `printf -v XDG_CONFIG_HOME /tmp/c; ls`, ""},
		{"printf/logbook-data", `printf -v LOGBOOK_DATA /tmp/d; ls`, "review"},
		{"read/path", `read PATH <<< /tmp/evil; ls`, ""},
		{"read/second-name", `read a PATH <<< 'x /tmp/evil'; ls`, ""},
		{"read/array", `read -a PATH <<< /tmp/evil; ls`, ""},
		{"read/array-cluster", `read -raPATH <<< /tmp/evil; ls`, ""},
		{"read/opts", `read -r -p x PATH <<< /tmp/evil; ls`, ""},
		{"mapfile/path", `mapfile PATH <<< /tmp/evil; ls`, ""},
		{"mapfile/opts", `mapfile -t -n 1 PATH <<< /tmp/evil; ls`, ""},
		{"readarray/bash-env", `readarray -t BASH_ENV <<< /tmp/x; ls`, ""},
		{"getopts/path", `getopts a PATH -a; ls`, ""},
		{"wait/p", `wait -p PATH; ls`, ""},
		{"compgen/V", `compgen -V PATH -W /tmp/evil; ls`, ""},
		{"unset/path", `unset PATH; ls`, ""},
		{"unset/v", `unset -v PATH; ls`, ""},
		{"declare/nameref", `declare -n r=PATH; r=/tmp/evil; ls`, ""},
		{"local/nameref-unset", `f() { local -n r; r=PATH; r=/tmp/evil; ls; }; f`, ""},
		{"let/path", `let PATH=1; ls`, ""},
		{"declare/quoted", `declare "PATH=/tmp/evil"; ls`, ""},
		{"export/path", `export PATH=/tmp/evil; ls`, ""},
		// A name known only when it runs may be PATH.
		{"printf/unknown-name", `printf -v "$n" /tmp/evil; ls`, "review"},
		{"read/unknown-name", `read "$n" <<< /tmp/evil; ls`, "review"},
		// Names that change nothing of what runs.
		{"plain/printf-v", `printf -v x %s y; ls`, "allow"},
		{"plain/printf-cluster", `printf -vx %s y; ls`, "allow"},
		{"plain/printf-format", `printf -- -v PATH`, "allow"},
		{"plain/read", `read -r line <<< x; ls`, "allow"},
		{"plain/read-prompt", `read -p PATH line <<< x; ls`, "allow"},
		{"plain/mapfile", `mapfile -t lines <<< x; ls`, "allow"},
		{"plain/getopts", `getopts ab opt -a; ls`, "allow"},
		{"plain/unset", `unset x; ls`, "allow"},
		{"plain/unset-f", `unset -f PATH; ls`, "allow"},
		{"plain/nameref", `declare -n r=x; r=1; ls`, "allow"},
	})
	// Under the blanket "Bash" too, through wrappers and bash -c.
	decideRows(t, blanketPolicies(t), []bypassRow{
		{"blanket/printf", `printf -v PATH /tmp/evil; ls`, ""},
		{"blanket/builtin", `builtin printf -v PATH /tmp/evil; ls`, ""},
		{"blanket/command", `command read PATH <<< /tmp/evil; ls`, ""},
		{"blanket/bash-c", `bash -c 'printf -vLD_PRELOAD /tmp/x.so; ls'`, ""},
		{"blanket/mapfile", `mapfile -t BASH_ENV < /tmp/x`, ""},
		{"plain/printf", `printf -v x %s y; ls`, "allow"},
	})
}
