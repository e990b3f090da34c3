package gate

import (
	"testing"

	"github.com/logbook-dev/logbook/reducers/review"
)

// readersPolicy allows the programs the gate counts as reading or knows
// the options of, by narrow patterns, and denies rm -rf and curl.
const readersPolicy = `
allow = ["Bash(git submodule:*)", "Bash(git bisect:*)", "Bash(git filter-branch:*)", "Bash(git rebase:*)",
         "Bash(git send-email:*)", "Bash(git clone:*)", "Bash(git status)", "Bash(sed:*)", "Bash(echo:*)",
         "Bash(sort:*)", "Bash(rg:*)", "Bash(less:*)", "Bash(tar:*)", "Bash(find:*)", "Bash(make:*)", "Bash(ssh:*)", "Bash(ls:*)"]
deny  = ["Bash(rm -rf:*)", "Bash(curl:*)", "Edit(/etc/**)"]
`

// TestDecide_ReadersThatRunCommands: a program the gate counts as only
// reading or printing, or whose options it knows, that runs a command by
// an option or a script command (git submodule foreach, git bisect run,
// git filter-branch's filters, GNU sed's e command and s///e flag, sort
// --compress-program, rg --pre, tar --to-command, …) is read through:
// the command it runs meets the deny rules and must be allowed itself;
// what the gate cannot read through (sed's s///e runs the pattern
// space) is allowed by no pattern; a file such an option writes meets
// the Write and Edit rules.
func TestDecide_ReadersThatRunCommands(t *testing.T) {
	decideRows(t, dataDirPolicies(t, readersPolicy), []bypassRow{
		{"git/submodule-foreach", `git submodule foreach 'rm -rf /x'`, "deny"},
		{"git/submodule-foreach-words", `git submodule --quiet foreach --recursive rm -rf /x`, "deny"},
		{"git/submodule-foreach-other", `git submodule foreach 'id'`, "review"}, // run in each submodule's folder
		{"git/bisect-run", `git bisect run rm -rf /x`, "deny"},
		{"git/bisect-run-sh", `git bisect run sh -c 'curl x'`, "deny"},
		{"git/bisect-run-other", `git bisect run ./test.sh`, ""},
		{"git/filter-branch-tree", `git filter-branch --tree-filter 'curl x' HEAD`, "deny"},
		{"git/filter-branch-index", `git filter-branch -f --index-filter='rm -rf /x' HEAD`, "deny"},
		{"git/filter-branch-msg", `git filter-branch --msg-filter 'id' HEAD`, ""},
		{"git/filter-branch-commit", `git filter-branch --commit-filter 'curl x' HEAD`, "deny"},
		{"git/filter-branch-parent", `git filter-branch --parent-filter 'curl x' HEAD`, "deny"},
		{"git/filter-branch-tag", `git filter-branch --tag-name-filter 'curl x' HEAD`, "deny"},
		{"git/filter-branch-env", `git filter-branch --env-filter 'curl x' HEAD`, "deny"},
		{"git/rebase-x", `git rebase -x 'rm -rf /x' main`, "deny"},
		{"git/rebase-exec", `git rebase --exec='curl x' main`, "deny"},
		{"git/rebase-cluster", `git rebase -ix 'curl x' main`, "deny"},
		{"git/send-email", `git send-email --to-cmd='curl x' p.patch`, "deny"},
		{"git/clone-upload-pack", `git clone --upload-pack='curl x' /r d`, "deny"},
		{"git/unknown-sub", `x=submodule; git $x foreach 'id'`, ""},
		{"sed/e-command", `sed -n '1erm -rf /x' f`, "deny"},
		{"sed/e-command-e", `sed -e '1e curl x' f`, "deny"},
		{"sed/e-multi", "sed -n -e p -e '$e curl x' f", "deny"},
		{"sed/e-after-semicolon", `sed 'p;1e curl x' f`, "deny"},
		{"sed/e-in-block", `sed '/a/{e curl x
}' f`, "deny"},
		{"sed/s-e-flag", `echo cu | sed 's/$/rl x/e'`, ""},
		{"sed/s-ge-flag", `echo x | sed 's/x/id/ge'`, ""},
		{"sed/bare-e", `echo id | sed e`, ""},
		{"sed/expression-long", `sed --expression='1e curl x' f`, "deny"},
		{"sed/script-file", `sed -f s.sed f`, ""},
		{"sed/w-etc", `sed -n 'w /etc/x' f`, "deny"},
		{"sed/s-w-etc", `sed 's/a/b/w /etc/x' f`, "deny"},
		{"sed/w-other", `sed -n 'w out.txt' f`, ""},
		{"sed/unknown-script", `sed "$s" f`, "review"},
		// A bracket expression holds the delimiter (GNU sed 4.9): the
		// flags after the regex and replacement are seen.
		{"sed/bracket-e-flag", `sed 's/[/]*.*/touch ..\/x/e' f`, ""},
		{"sed/bracket-e-flag-negated", `sed '1!d;s/[^/]*.*/id/e' f`, ""},
		{"sed/bracket-w-flag", `sed -n 's/[/]/c/w /etc/x' f`, "deny"},
		{"sed/bracket-address-e", `sed '/[/]/e curl x' f`, "deny"},
		{"sed/bracket-class", `sed 's/[[:alpha:]/]*/id/e' f`, ""},
		{"sed/bracket-backslash", `sed 's/[\/]/x/' f`, ""},
		{"sort/compress", `sort -S 1K --compress-program=sh big.txt`, ""},
		{"sort/compress-curl", `sort --compress-program curl big.txt`, "deny"},
		{"sort/compress-abbrev", `sort --compress=curl big.txt`, "deny"},
		{"sort/compress-co", `sort -S 1K --co=sh big.txt`, ""},
		{"sort/compress-co-curl", `sort --co=curl big.txt`, "deny"},
		{"sort/compress-co-next", `sort --com curl big.txt`, "deny"},
		{"sort/compress-after-flag", `sort --rev --compress-p curl big.txt`, "deny"},
		{"sort/output-abbrev", `sort --ou=/etc/x f`, "deny"},
		{"tar/checkpoint-abbrev", `tar -cf a.tar --checkpoint=1 --checkpoint-=exec='curl x' .`, "deny"},
		{"git/difftool-ext-abbrev", `git difftool --e='curl x'`, "deny"},
		{"git/archive-exec-abbrev", `git archive --e='curl x' --remote=r HEAD`, "deny"},
		{"git/clone-upload-abbrev", `git clone --u='curl x' /r d`, "deny"},
		{"git/submodule-helper-foreach", `git submodule--helper foreach 'curl x'`, "deny"},
		{"git/submodule-helper-foreach-rm", `git submodule--helper foreach --recursive rm -rf /x`, "deny"},
		{"git/filter-branch-original", `git filter-branch --original --msg-filter --tree-filter 'curl x' HEAD`, "deny"},
		{"git/filter-branch-original-other", `git filter-branch --original --msg-filter --tree-filter 'id' HEAD`, ""},
		{"git/filter-branch-d", `git filter-branch -d --index-filter --env-filter 'curl x' HEAD`, "deny"},
		{"git/filter-branch-prune", `git filter-branch --prune-empty -f --setup 'curl x' HEAD`, "deny"},
		{"env/tar-options", `TAR_OPTIONS=--to-command=curl tar xf a.tar`, ""},
		{"env/tar-options-export", `export TAR_OPTIONS='--to-command=sh -c id'; tar xf a.tar`, ""},
		{"env/ripgrep-config", `RIPGREP_CONFIG_PATH=./rgrc rg x .`, ""},
		{"env/less", `LESS='+!curl x' less f`, ""},
		{"env/rsync-rsh", `RSYNC_RSH='curl x' tar xf a.tar`, "deny"},
		{"sort/output-etc", `sort -o /etc/passwd f`, "deny"},
		{"rg/pre", `rg --pre curl x .`, "deny"},
		{"rg/pre-eq", `rg --pre=sh x .`, ""},
		{"tar/to-command", `tar -xf a.tar --to-command='curl x'`, "deny"},
		{"tar/checkpoint", `tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='curl x' .`, "deny"},
		{"tar/use-compress", `tar -I 'sh -c id' -cf a.tar .`, ""},
		{"tar/old-style-I", `tar cIf curl a.tar .`, "deny"},
		{"tar/remote", `tar -cf host:a.tar .`, ""},
		{"less/bang", `less '+!curl x' f`, "review"},
		{"less/bang-other", `less '+!id' f`, ""},
		{"less/log", `less -o /tmp/log f`, ""},
		{"less/log-abbrev", `less --log-f=/tmp/log f`, ""},
		{"less/lesskey-abbrev", `less --lesskey-s=k f`, ""},
		{"find/fprint-etc", `find . -fprint /etc/x`, "deny"},
		{"ssh/proxy-command", `ssh -o ProxyCommand='curl x' h ls`, "deny"},
		{"ssh/proxy-command-attached", `ssh -oLocalCommand='rm -rf /x' -o PermitLocalCommand=yes h`, "deny"},
		{"ssh/config-file", `ssh -F ./cfg h ls`, ""},
		{"plain/ssh", `ssh -p 22 -o BatchMode=yes h ls`, "allow"},
		{"plain/submodule", `git submodule update --init`, "allow"},
		{"plain/bisect", `git bisect good HEAD~3`, "allow"},
		{"plain/bisect-run", `git bisect run make test`, "allow"},
		{"plain/sed", `sed -n '1,5p;/end/q' f`, "allow"},
		{"plain/sed-s", `sed -e 's/a/b/g' -e 's|x|y|2' f`, "allow"},
		{"plain/sed-i", `sed -i.bak 's/old/new/' f`, "allow"},
		{"plain/sed-bracket", `sed 's/[^/]*$//' f`, "allow"},
		{"plain/sed-bracket-slash", `sed -e 's/[/]/_/g' -e 's/[]/]/x/' f`, "allow"},
		{"plain/sed-text", "sed '1i hello e world' f", "allow"},
		{"plain/sed-sandbox", `sed --sandbox 's/x/y/e' f`, "allow"},
		{"plain/sort", `sort -k2 -t, -u f`, "allow"},
		{"plain/sort-long", `sort --key 2 --field-sep , --rev f`, "allow"},
		{"plain/filter-branch", `git filter-branch --original refs/o --prune-empty --msg-filter 'sed s/a/b/' HEAD`, "allow"},
		{"plain/rg", `rg -n --pre-glob '*.gz' foo .`, "allow"},
		{"rg/pre-other", `rg --pre pdftotext foo docs`, ""},
		{"plain/tar", `tar -czf a.tgz src`, "allow"},
		{"plain/less", `less +G f`, "allow"},
	})
}

// TestGuard_LeverThroughReaders: Logbook's levers run by a program the
// gate counts as reading (git submodule foreach, git bisect run, sed's e
// command) are reviewed at critical risk, as when run directly.
func TestGuard_LeverThroughReaders(t *testing.T) {
	pols := dataDirPolicies(t, `allow = ["Bash"]`)
	for _, cmd := range []string{
		`git submodule foreach 'logbook review allow tu1 --reason ok'`,
		`git bisect run logbook session mode abc full_access`,
		`git filter-branch --tree-filter 'logbook-hook x' HEAD`,
		`sed -n '1e logbook review allow tu1' f`,
		`git rebase -x 'logbook serve' main`,
		`git submodule--helper foreach 'logbook review allow tu1 --reason ok'`,
		`git filter-branch --original --msg-filter --tree-filter 'logbook review allow tu1' HEAD`,
		`RSYNC_RSH='logbook review allow tu1' rsync -a h:x .`,
		`git submodule foreach 'logbook command stdin c1 yes'`,
		`git bisect run logbook command stop c1`,
		`sed -n '1e logbook top' f`,
		`git rebase -x 'logbook workspace cancel-check r1' main`,
	} {
		m := Decide(pols, bash(cmd))
		if m.Action != ActionReview || m.Pattern != LeverGuardPattern || m.Risk != review.RiskCritical {
			t.Errorf("%q: %+v, want review by %q at critical", cmd, m, LeverGuardPattern)
		}
	}
}

// TestPolicy_RunOptionsNeverAllowed: an option or an environment
// variable through which a program runs a command, or reads options or
// a configuration: one the gate reads through (rsync -e, zip
// -TT, man -P) is read through, as a command line; one it does not
// (rsync --rsync-path, man -H, scp -S, TAR_OPTIONS, ZIPOPT, MANOPT,
// LESS, RIPGREP_CONFIG_PATH) makes the command opaque: no pattern
// allows it, the blanket one included.
func TestPolicy_RunOptionsNeverAllowed(t *testing.T) {
	decideRows(t, blanketPolicies(t), []bypassRow{
		{"rsync/e", `rsync -e 'logbook review allow tu1' h:x .`, "review"},
		{"rsync/cluster", `rsync -avze 'rm -rf /x' h:x .`, "deny"},
		{"rsync/rsh", `rsync --rs='rm -rf /x' h:x .`, "deny"},
		{"rsync/rsync-path", `rsync --rsync-path='sh -c id' localhost:x .`, ""},
		{"zip/TT", `zip -T -TT 'logbook review allow tu1' a.zip f`, "review"},
		{"zip/unzip-command", `zip --unzip-command 'rm -rf /x' -T a.zip f`, "deny"},
		{"man/P", `man -P 'logbook review allow tu1' ls`, "review"},
		{"man/pager", `man --pag='rm -rf /x' ls`, "deny"},
		{"man/html", `man -Hfirefox ls`, ""},
		{"scp/S", `scp -S ./x a h:b`, ""},
		{"env/tar-options", `TAR_OPTIONS=--to-command=curl tar xf a.tar`, ""},
		{"env/zipopt", `ZIPOPT='-TT curl' zip -T a.zip f`, ""},
		{"env/manopt", `MANOPT='-P id' man ls`, ""},
		{"env/less", `LESS='+!id' less f`, ""},
		{"env/ripgrep", `RIPGREP_CONFIG_PATH=./rgrc rg x .`, ""},
		{"env/rsync-rsh", `RSYNC_RSH='logbook review allow tu1' rsync -a h:x .`, "review"},
		{"plain/rsync", `rsync -avz --delete -f '- *.o' src/ dst/`, "allow"},
		{"plain/rsync-e", `rsync -avz -e 'ssh -p 22' src/ h:dst/`, "allow"},
		{"plain/man-P", `man -P cat ls`, "allow"},
		{"rsync/e-sh-c", `rsync -e 'sh -c' src/ h:dst/`, "review"},
		{"rsync/e-other", `rsync -e ./x src/ h:dst/`, ""},
		{"plain/zip", `zip -r a.zip src`, "allow"},
		{"plain/man", `man -k printf`, "allow"},
		{"plain/scp", `scp -P 22 a h:b`, "allow"},
	})
}
