package gate

import "testing"

// TestDecide_DeniedTextInOtherPrograms: a deny or review rule's command
// written, word by word, anywhere in the command line's words (an
// interpreter's code, a here-string fed to one, make --eval, a wrapper
// the gate does not know) gets the call reviewed at least: no allow
// rule allows it.
func TestDecide_DeniedTextInOtherPrograms(t *testing.T) {
	decideRows(t, blanketPolicies(t), []bypassRow{
		{"make/eval", `make -f /dev/null --eval="x:;rm -rf /x" x`, "review"},
		{"tclsh/here-string", `tclsh <<< "exec rm -rf /x"`, "review"},
		{"tclsh/here-doc", "tclsh <<'E'\nexec rm -rf /x\nE", "review"},
		{"awk/system", `awk "BEGIN{system(\"rm -rf /x\")}"`, "review"},
		{"perl/system", `perl -e "system q(rm -rf /x)"`, "review"},
		{"python/os-system", `python3 -c "import os; os.system(\"rm -rf /x\")"`, "review"},
		{"ruby/backticks", "ruby -e '`rm -rf /x`'", "review"},
		{"node/exec", `node -e 'require("child_process").execSync("rm -rf /x")'`, "review"},
		{"unknown-wrapper", `mywrap --opt rm -rf /x`, "review"},
		{"unknown-wrapper/path", `mywrap /bin/rm -rf /x`, "review"},
		{"pipe/echo-python", `echo 'import os; os.system("rm -rf /x")' | python3`, "review"},
		{"pipe/heredoc-perl", "cat <<'E' | perl\nsystem 'rm -rf /x'\nE", "review"},
		{"file/then-run", `printf 'exec rm -rf /x' > /tmp/t.tcl && tclsh /tmp/t.tcl`, "review"},
		{"vim/bang", `vim -c ':!rm -rf /x'`, "review"},
		{"plain/python", `python3 -c 'print(1)'`, "allow"},
		{"plain/echo-then-python", `echo hi | python3 -c 'import sys; print(sys.stdin.read())'`, "allow"},
		{"plain/awk", `awk '{print $1}' f`, "allow"},
		{"plain/rm-file", `python3 -c 'import os; os.remove("x")'`, "allow"},
		{"plain/rm-alone", `echo rm; ls -rf`, "allow"},
	})
	p, err := ParsePolicy("p", []byte("allow = [\"Bash\"]\nreview = [\"Bash(git push:*)\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	decideRows(t, []*Policy{p}, []bypassRow{
		{"review/python", `python3 -c 'import subprocess; subprocess.run("git push origin main", shell=True)'`, "review"},
		{"review/perl-list", `perl -e 'system("git", "push")'`, "review"},
		{"plain/git-status", `python3 -c 'import subprocess; subprocess.run(["git", "status"])'`, "allow"},
	})
}
