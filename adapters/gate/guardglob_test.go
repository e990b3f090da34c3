package gate

import (
	"encoding/json"
	"testing"

	"github.com/logbook-dev/logbook/reducers/review"
)

// annPolicies returns the policy file text src (as the data dir's
// "data") under the built-in rules for ann's default data dir,
// /home/ann/.local/share/logbook.
func annPolicies(t *testing.T, src string) []*Policy {
	t.Helper()
	p, err := ParsePolicy("data", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return []*Policy{builtinFor("/home/ann/.local/share/logbook"), p}
}

// TestGuard_GlobbedDataDirPaths: with every echo allowed by a rule, a
// shell command any word of which may expand, as a glob, a brace list,
// a tilde or a variable, to the data dir or a path in it is reviewed at
// critical risk; words that cannot reach it are left to the rules.
func TestGuard_GlobbedDataDirPaths(t *testing.T) {
	t.Setenv("HOME", "/home/ann")
	t.Setenv("XDG_DATA_HOME", "")
	pols := annPolicies(t, `allow = ["Bash(echo:*)", "Bash(ls:*)", "Bash(cd:*)", "Bash(cat:*)", "Bash(rm:*)", "Bash(cp:*)"]`)
	for _, tc := range []struct {
		cmd      string
		reviewed bool
	}{
		{`echo x > ~/.local/share/lo*/redact.txt`, true},
		{`echo x > ~/.local/share/logb[o]ok/redact.txt`, true},
		{`echo x > /home/ann/.local/share/logbook$X/redact.txt`, true},
		{`cat /home/ann/.local/share/logbook`, true},
		{`cat "/home/ann/.local/share/logbook"/x`, true},
		{`echo x > ~/.l*/s*/l*/redact.txt`, true},
		{`echo x > $HOME/.local/share/logbook/redact.txt`, true},
		{`echo x > ~/.local/share/log?ook/creds.json`, true},
		{`echo x > ~/.local/*/logbook/x`, true},
		{`echo x > ~/.local/share/*/x`, true},
		{`echo x > ~/*/*/*/x`, true},
		{`echo x > ~/**/redact.txt`, true},
		{`echo x > /home/ann/.local/share/[l]ogbook`, true},
		{`echo x > /home/*/.local/share/lo*`, true},
		{`echo x > /h*/a*/.local/share/logbook/x`, true},
		{`echo x > /home/ann/.local/share/[!x]ogbook/x`, true},
		{`echo x > /home/ann/.local/share/[^x]ogbook/x`, true},
		{`echo x > ~/.local/share/{logbook,x}/creds.json`, true},
		{`echo x > ~/.local/share/{lo,x}gbook/creds.json`, true},
		{`echo x > ~/.local/{share,x}/l*/creds.json`, true},
		{`echo x > "$XDG_DATA_HOME"/logbook/creds.json`, true},
		{`echo x > ${XDG_DATA_HOME}/lo*/creds.json`, true},
		{`echo x > ${XDG_DATA_HOME:-~/.local/share}/lo*/creds.json`, true},
		{`echo x > $D/logbook/creds.json`, true},
		{`echo x > $D/l?gbook/creds.json`, true},
		{`echo x > ~ann/.local/share/lo*/x`, true},
		{`echo x > ~/".local/share/lo"*/redact.txt`, true},
		{`echo x > '~/.local/share/lo*/redact.txt'`, true},
		{`echo x > ~/.local/share/lo\*/redact.txt`, true},
		{`echo x > ~/.local/share/lo''*/redact.txt`, true},
		{`echo x > ~/.LOCAL/Share/LO*/redact.txt`, true},
		{`echo x > ~/.local/share/x*/../lo*/redact.txt`, true},
		{`echo x > $HOME/.local/share/lo*`, true},
		{`echo x > ${HOME}/.local/share/lo*`, true},
		{`echo x>~/.local/share/lo*/x`, true},
		{`cp /tmp/a ~/.local/share/lo*/`, true},
		// A word holding a part the gate cannot know may be anything,
		// the data dir among it.
		{`echo v$VERSION`, true},
		{`cat $D/*/x`, true},
		{`X=/tmp; cat $X/a`, false},
		{`cd ~/.local/share && rm -rf logbook`, true},
		{`cd ~/.local/sh* && echo x > lo*/x`, true},
		{`cd ~ && rm -rf .local/share/l*`, true},
		{`cd && rm -rf .local/share/l*`, true},
		{`cd / && rm -rf home/ann/.local/share/logbook`, true},
		{`cd ~/.local/share; cat */redact.txt`, true},
		// A command that removes, moves or locks away an ancestor of the
		// data dir takes the data dir with it.
		{`rm -rf ~`, true},
		{`rm -rf ~/.local`, true},
		{`rm -rf ~/.local/share/`, true},
		{`rm -rf ~/*`, true},
		{`sudo /bin/rm -rf /home/ann`, true},
		{`rm -rf /`, true},
		{`mv ~/.local ~/.local.old`, true},
		{`chmod -R 000 ~/.local`, true},
		{`find ~/.local -delete`, true},
		{`cd ~ && rm -rf .local`, true},
		{`cd && rm -r .local/share`, true},
		{`rsync -a --delete /tmp/empty/ ~/.local/share/`, true},
		// A directory between the home directory and the data dir is
		// reviewed whatever runs: no ordinary command needs it. A glob
		// counts as it could match under dotglob.
		{`ls ~/*`, true},
		{`ls ~/.local/share`, true},
		{`find ~/.local -name x`, true},
		{`ls ~ && du -sh ~/.local`, true},

		{`echo x > /tmp/lo*/file`, false},
		{`ls ~/src/logic*`, false},
		{`ls ~/.local/share/*.txt`, false},
		{`ls ~/.local/bin/lo*`, false},
		{`echo x > /tmp/{a,b}/logbook/x`, false},
		{`echo $HOME`, false},
		{`ls *`, false},
		{`ls src/logic*/x.go`, false},
		{`cd cmd && ls logbook/`, false},
		{`echo x > /home/ann/.local/share/x*/y`, false},
		{`echo x > /home/bob/.local/share/lo*/y`, false},
		{`rm -rf ~/.cache`, false},
		{`rm -rf ~/.local/bin/x`, false},
		{`rm -rf build`, false},
		{`cd src && rm -rf build`, false},
		{`mv ~/a ~/b`, false},
	} {
		m := Decide(pols, bash(tc.cmd))
		if tc.reviewed && (m.Action != ActionReview || m.Risk != review.RiskCritical || m.Pattern != GuardPattern) {
			t.Errorf("%q: %+v, want the guard's review at critical risk", tc.cmd, m)
		}
		if !tc.reviewed && (m.Pattern == GuardPattern || m.Risk == review.RiskCritical) {
			t.Errorf("%q: %+v, want it left to the rules", tc.cmd, m)
		}
	}

	// A command run in the data dir names it with any relative word.
	in, _ := json.Marshal(map[string]string{"command": "echo x > lo"})
	if m := Decide(pols, Call{Tool: "Bash", Input: in, Dir: "/home/ann/.local/share/logbook"}); m.Action != ActionReview {
		t.Errorf("a write in the data dir: %+v, want review", m)
	}
	in, _ = json.Marshal(map[string]string{"command": "echo x > logbook/x"})
	if m := Decide(pols, Call{Tool: "Bash", Input: in, Dir: "/home/ann/.local/share"}); m.Action != ActionReview {
		t.Errorf("a write from the data dir's parent: %+v, want review", m)
	}

	// A session working in a default workspace, beside the data dir
	// (~/.local/share/logbook-workspaces), is not taken for one reaching
	// into it: the guard matches the data dir's name exactly.
	ws := "/home/ann/.local/share/logbook-workspaces/proj/ws1"
	for _, cmd := range []string{`echo x > main.go`, `rm -rf build`, `cat ./README.md`, `echo x > /home/ann/.local/share/logbook-workspaces/proj/ws1/x`, `ls ~/.local/share/logbook-workspaces/proj`} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		if m := Decide(pols, Call{Tool: "Bash", Input: in, Dir: ws}); m.Pattern == GuardPattern || m.Risk == review.RiskCritical {
			t.Errorf("%q in a default workspace: %+v, want it left to the rules", cmd, m)
		}
	}

	// $XDG_DATA_HOME is read as the environment has it, as well as its
	// default.
	t.Setenv("XDG_DATA_HOME", "/srv/xdg")
	// pols[1] is the rule file allowing echo.
	pols = []*Policy{builtinFor("/srv/xdg/logbook"), pols[1]}
	for _, cmd := range []string{`echo x > $XDG_DATA_HOME/l*/x`, `cd $XDG_DATA_HOME && rm -r log*`, `echo x > /srv/*/lo*/x`} {
		if m := Decide(pols, bash(cmd)); m.Action != ActionReview {
			t.Errorf("%q with the data dir under $XDG_DATA_HOME: %+v, want review", cmd, m)
		}
	}
}

// TestGuard_ClaudeSettings: a write to Claude Code's settings, where
// the hooks that run the gate are wired, is reviewed at high risk
// however the command spells the path, so a rule alone never allows it;
// another settings.json, or a .claude folder's other files, are left to
// the rules.
func TestGuard_ClaudeSettings(t *testing.T) {
	t.Setenv("HOME", "/home/ann")
	pols := annPolicies(t, `allow = ["Bash", "Write", "Edit"]`)
	for _, tc := range []struct {
		call     Call
		reviewed bool
	}{
		{bash(`echo '{}' > ~/.claude/settings.json`), true},
		{bash(`sed -i /hooks/d .claude/settings.local.json`), true},
		{bash(`cd ~/.claude && echo x > settings.json`), true},
		{bash(`echo x > ~/.cl*/sett*`), true},
		{bash(`echo x > ~/.claude/{settings,x}.json`), true},
		{bash(`echo x > ~/".claude"/set\tings.json`), true},
		{bash(`d=.cla; echo x > ${d}ude/${s}ings.json`), true},
		{Call{Tool: "Bash", Input: json.RawMessage(`{"command":"rm settings.json"}`), Dir: "/work/p/.claude"}, true},
		{file("Write", "/home/ann/.claude/settings.json"), true},
		{file("Edit", "/work/p/.claude/settings.local.json"), true},
		{file("Edit", "/work/p/.CLAUDE/Settings.json"), true},

		{bash(`cat .vscode/settings.json`), false},
		{bash(`ls ~/.claude/agents`), false},
		{bash(`ls *.json`), false},
		{file("Write", "/work/p/.vscode/settings.json"), false},
		{file("Write", "/work/p/.claude/agents/a.md"), false},
	} {
		m := Decide(pols, tc.call)
		if tc.reviewed && (m.Action != ActionReview || m.Risk != review.RiskCritical || m.Pattern != SettingsGuardPattern) {
			t.Errorf("%s %s: %+v, want the settings guard's review at critical risk", tc.call.Tool, tc.call.Input, m)
		}
		if !tc.reviewed && m.Action != ActionAllow {
			t.Errorf("%s %s: %+v, want the rule's allow", tc.call.Tool, tc.call.Input, m)
		}
	}
	// The data dir's guard is the stricter: it wins.
	if m := Decide(pols, bash(`cp ~/.claude/settings.json ~/.local/share/logbook/`)); m.Pattern != GuardPattern || m.Risk != review.RiskCritical {
		t.Errorf("a command naming both: %+v, want the data dir's guard", m)
	}
}

// TestGuard_UnknownValues: with ls and cat allowed by a rule, an
// argument, a redirection's target or an environment value whose value
// the gate cannot know (a variable the line gives no value, a command
// substitution, the words xargs adds) may be the data dir, and is
// reviewed at critical risk like a word that spells it; a variable the
// line gives values to is read by those values. An arithmetic expansion
// is a number, no path of its own, but still any text where it stands
// in a path.
func TestGuard_UnknownValues(t *testing.T) {
	t.Setenv("HOME", "/home/ann")
	t.Setenv("XDG_DATA_HOME", "")
	pols := annPolicies(t, `allow = ["Bash(ls:*)", "Bash(cat:*)", "Bash(echo:*)", "Bash(find:*)", "Bash(git:*)"]`)
	for _, cmd := range []string{
		`ls $X`,
		`cat $X`,
		`ls "$X"`,
		`ls ${X:-/tmp}`,
		`ls $(echo L2hvbWUvYW5uLy5sb2NhbC9zaGFyZS9sb2dib29rCg==|base64 -d)`,
		"ls `echo L2hvbWUvYW5uLy5sb2NhbC9zaGFyZS9sb2dib29rCg==|base64 -d`",
		`ls "$(echo /home/ann/.local/share/logbook)"`,
		`D=/home/ann/.local/share; ls $D/logbook`,
		`cat /home/ann/.local/share/logbook/$((1+1))`,
		`echo $((x))`,
		`ls $((x+1))`,
		`cat "/home/ann/.local/share/logbook/$((1+1))"`,
		`ls $X*`,
		`ls /tmp/$X`,
		`ls ~/$X`,
		`cat < $X`,
		`echo x > "$1"`,
		`ls "$@"`,
		`X=$(echo L2hvbWU=|base64 -d); ls $X`,
		`read X; cat $X`,
		`for f in $(cat list); do cat $f; done`,
		`for f; do cat "$f"; done`,
		`a=(/tmp); ls $a`,
		`GIT_DIR=$(cat /tmp/p) git log`,
		`echo L2hvbWU= | base64 -d | xargs cat`,
		`bash -c 'ls $X'`,
		`X=/tmp; read X; cat "$X"`,
		`X=/tmp; mapfile -t X; cat $X`,
		`X=/tmp; printf -v X %s "$Y"; cat $X`,
		`X=/tmp cat $X`,
		`cat $X; X=/tmp`,
		`(X=/tmp); ls $X`,
		`echo | X=/tmp; ls $X`,
		`X=/tmp & ls $X`,
		`: $(X=/tmp); ls $X`,
		`X=$X/a; ls $X`,
	} {
		m := Decide(pols, bash(cmd))
		if m.Action != ActionReview || m.Risk != review.RiskCritical || m.Pattern != GuardPattern {
			t.Errorf("%q: %+v, want the guard's review at critical risk", cmd, m)
		}
	}
	for _, cmd := range []string{
		`ls $HOME`,
		`ls "$HOME/src"`,
		`X=/tmp; ls $X`,
		`X=/tmp; (ls $X)`,
		`X=/tmp; ls $X | cat`,
		`for f in a b; do cat "$f"; done`,
		`ls src; echo $?`,
		`ls $((1+1))`,
		`echo "$((1+1))" > "out$((2*3)).txt"`,
		`find src -name '*.go' -exec cat {} \;`,
	} {
		if m := Decide(pols, bash(cmd)); m.Pattern == GuardPattern || m.Risk == review.RiskCritical {
			t.Errorf("%q: %+v, want it left to the rules", cmd, m)
		}
	}
}
