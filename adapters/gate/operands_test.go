package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// operandsPolicy allows the programs that write their operands by
// narrow patterns, and denies or reviews writes to some paths.
const operandsPolicy = `
allow  = ["Bash(cp:*)", "Bash(mv:*)", "Bash(tee:*)", "Bash(touch:*)", "Bash(sed:*)", "Bash(install:*)",
          "Bash(ln:*)", "Bash(dd:*)", "Bash(truncate:*)", "Bash(rsync:*)", "Bash(unzip:*)", "Bash(tar:*)",
          "Bash(git:*)", "Bash(patch:*)", "Bash(chmod:*)", "Bash(chown:*)", "Bash(rm:*)", "Bash(rmdir:*)",
          "Bash(unlink:*)", "Bash(shred:*)", "Bash(perl:*)", "Bash(awk:*)", "Bash(gawk:*)", "Bash(mkdir:*)",
          "Bash(uniq:*)", "Bash(gzip:*)", "Bash(gunzip:*)", "Bash(zstd:*)", "Bash(zip:*)", "Bash(mktemp:*)",
          "Bash(split:*)", "Bash(xxd:*)", "Bash(link:*)", "Bash(mkfifo:*)", "Bash(sudo:*)", "Bash(xargs:*)",
          "Bash(cat:*)", "Bash(echo:*)", "Bash(find:*)",
          "Bash(curl:*)", "Bash(wget:*)", "Bash(vim:*)", "Bash(ed:*)", "Bash(ls:*)", "Bash(grep:*)", "Bash(sort:*)", "Bash(wc:*)"]
deny   = ["Edit(.env)", "Write(/etc/**)"]
review = ["Write(/srv/**)"]
`

// operandRows are commands whose programs write, create or remove the
// files their operands name, with the action the operands' paths call
// for under operandsPolicy and under the blanket policy with the same
// file rules; the controls write no path a rule names.
var operandRows = []bypassRow{
	{"cp/dest", `cp x .env`, "deny"},
	{"cp/dest-quoted", `cp x .en"v"`, "deny"},
	{"cp/into-dir", `cp a b /etc`, "deny"},
	{"cp/recursive", `cp -r src /etc/app`, "deny"},
	{"cp/t", `cp -t /etc x`, "deny"},
	{"cp/target-directory", `cp --target-directory=/etc x`, "deny"},
	{"cp/target-abbrev", `cp --targ /etc x`, "deny"},
	{"cp/options-after", `cp x /etc/hosts -f`, "deny"},
	{"cp/review", `cp x /srv/x`, "review"},
	{"cp/backup-suffix", `cp -b -S v x .en`, "review"},
	{"cp/glob-into", `cp *.conf /etc`, "deny"},
	{"cp/unknown-dest", `f=/etc; cp x "$f/y"`, "review"},
	{"mv/dest", `mv x .env`, "deny"},
	{"mv/source", `mv .env x`, "deny"},
	{"mv/target-directory", `mv --target-directory=/etc x`, "deny"},
	{"mv/t", `mv -t /srv x`, "review"},
	{"tee/file", `echo k=v | tee .env`, "deny"},
	{"tee/append", `echo x | tee -a /etc/hosts`, "deny"},
	{"touch/file", `touch .env`, "deny"},
	{"sed/i", `sed -i s/a/b/ .env`, "deny"},
	{"sed/i-suffix", `sed -i.bak -e s/a/b/ /etc/x`, "deny"},
	{"sed/ie", `sed -ie s/a/b/ .env`, "deny"},
	{"sed/in-place", `sed --in-place=.bak s/a/b/ .env`, "deny"},
	{"sed/in-place-abbrev", `sed --in s/a/b/ .env`, "deny"},
	{"sed/i-script-file", `sed -i -f s.sed .env`, "deny"},
	{"sed/backup-named", `sed -i'.e*' s/a/b/ nv`, "deny"},
	{"install/dest", `install x .env`, "deny"},
	{"install/mode", `install -m 644 x /etc/x`, "deny"},
	{"install/t", `install -t /etc x`, "deny"},
	{"install/d", `install -d /etc/app`, "deny"},
	{"ln/sf", `ln -sf x .env`, "deny"},
	{"ln/into", `ln -s /tmp/x /etc`, "deny"},
	{"link/second", `link x .env`, "deny"},
	{"dd/of", `dd of=.env`, "deny"},
	{"dd/if-of", `dd if=x of=/etc/x bs=1`, "deny"},
	{"truncate/s0", `truncate -s0 .env`, "deny"},
	{"truncate/size", `truncate --size 0 /etc/x`, "deny"},
	{"rsync/dest", `rsync x .env`, "deny"},
	{"rsync/tree", `rsync -a src/ /etc/`, "deny"},
	{"rsync/remove-source", `rsync -a --remove-source-files .env h:x/`, "deny"},
	{"unzip/d", `unzip -d /etc a.zip`, "deny"},
	{"unzip/cwd", `unzip a.zip`, "review"},
	{"tar/C", `tar -x -C /etc -f a.tar`, "deny"},
	{"tar/old-style-C", `tar xzf a.tgz -C /etc`, "deny"},
	{"tar/directory", `tar -xf a.tar --directory=/etc`, "deny"},
	{"tar/directory-abbrev", `tar -xf a.tar --dir /etc`, "deny"},
	{"tar/cwd", `tar -xf a.tar`, "review"},
	{"tar/absolute", `cd /tmp && tar -xPf a.tar`, "review"},
	{"tar/create-archive", `tar -cf .env src`, "deny"},
	{"tar/remove-files", `tar -cf /tmp/a.tar --remove-files .env`, "deny"},
	{"git/checkout", `git checkout -- .env`, "deny"},
	{"git/checkout-C", `git -C /etc checkout -- passwd`, "deny"},
	{"git/restore", `git restore .env`, "deny"},
	{"git/rm", `git rm .env`, "deny"},
	{"patch/file", `patch .env x.patch`, "deny"},
	{"patch/d", `patch -d /etc -p1 -i x.patch`, "deny"},
	{"patch/cwd", `patch -p1 -i x.patch`, "review"},
	{"chmod/file", `chmod 600 .env`, "deny"},
	{"chmod/R", `chmod -R 700 /etc`, "deny"},
	{"chown/file", `chown u:g .env`, "deny"},
	{"rm/file", `rm .env`, "deny"},
	{"rm/rf", `rm -rf /etc/app`, "deny"},
	{"rm/tree-holding", `rm -r .`, "review"},
	{"rm/glob", `rm -f *`, "review"},
	{"rmdir/p", `rmdir -p /etc/a/b`, "deny"},
	{"unlink/file", `unlink .env`, "deny"},
	{"shred/u", `shred -u .env`, "deny"},
	{"perl/i", `perl -pi -e s/a/b/ .env`, "deny"},
	{"perl/i-bak", `perl -i.bak -pe 1 /etc/x`, "deny"},
	{"awk/inplace", `awk -i inplace '{print}' .env`, "deny"},
	{"gawk/include", `gawk --include=inplace 1 .env`, "deny"},
	{"mkdir/p", `mkdir -p /etc/a/b`, "deny"},
	{"uniq/out", `uniq in .env`, "deny"},
	{"gzip/file", `gzip .env`, "deny"},
	{"gunzip/file", `gunzip /etc/x.gz`, "deny"},
	{"zip/archive", `zip .env x`, "deny"},
	{"zip/move", `zip -m a.zip .env`, "deny"},
	{"mktemp/template", `mktemp /etc/x.XXXXXX`, "review"},
	{"split/prefix", `split f /etc/x`, "review"},
	{"xxd/out", `xxd -r in .env`, "deny"},
	{"mkfifo/file", `mkfifo .env`, "deny"},
	{"sudo/cp", `sudo cp x /etc/x`, "deny"},
	{"xargs/rm", `ls | xargs rm`, "review"},
	{"list/second", `ls && cp x .env`, "deny"},
	{"find/delete", `find /etc -name '*.conf' -delete`, "deny"},
	{"find/delete-cwd", `find -delete`, "review"},
	{"curl/o", `curl -sSo .env https://example.com/x`, "deny"},
	{"curl/output", `curl --output /etc/x https://example.com/x`, "deny"},
	{"curl/remote-name", `curl -O 'https://example.com/a/.env?x=1'`, "deny"},
	{"curl/output-dir", `curl --output-dir /etc -O https://example.com/x`, "deny"},
	{"curl/cookie-jar", `curl -c /srv/jar https://example.com/`, "review"},
	{"wget/O", `wget -O .env https://example.com/x`, "deny"},
	{"wget/name", `wget https://example.com/a/.env`, "deny"},
	{"wget/P", `wget -P /etc https://example.com/x`, "deny"},
	{"wget/recursive", `wget -r https://example.com/`, "review"},
	{"vim/file", `vim -c wq .env`, "deny"},
	{"ed/file", `printf 'w\n' | ed -s .env`, "deny"},
	{"program/unknown", `c=cp; $c x .env`, "deny"},
	{"program/unknown-tree", `c=rm; $c -r /srv/app`, "review"},
	{"plain/cp", `cp a b`, "allow"},
	{"plain/cp-r", `cp -r src dst`, "allow"},
	{"plain/cp-env-example", `cp .env.example .env.local`, "allow"},
	{"plain/mv", `mv a.txt b.txt`, "allow"},
	{"plain/tee", `echo x | tee out.txt`, "allow"},
	{"plain/touch", `touch new.txt`, "allow"},
	{"plain/sed-i", `sed -i s/a/b/ f.txt`, "allow"},
	{"plain/ln", `ln -s a b`, "allow"},
	{"plain/dd", `dd if=a of=b`, "allow"},
	{"plain/rsync", `rsync -a src/ dst/`, "allow"},
	{"plain/rsync-remote", `rsync -a src/ h:/etc/`, "allow"},
	{"plain/tar-create", `tar -czf a.tgz src`, "allow"},
	{"plain/tar-list", `tar -tf a.tar`, "allow"},
	{"plain/tar-C", `tar -xf a.tar -C build`, "allow"},
	{"plain/tar-stdout", `tar -xOf a.tar x`, "allow"},
	{"plain/unzip-list", `unzip -l a.zip`, "allow"},
	{"plain/unzip-d", `unzip -o a.zip -d build`, "allow"},
	{"plain/chmod", `chmod +x run.sh`, "allow"},
	{"plain/rm", `rm -rf build`, "allow"},
	{"plain/mkdir", `mkdir -p a/b`, "allow"},
	{"plain/git", `git checkout -- main.go`, "allow"},
	{"plain/git-status", `git status`, "allow"},
	{"plain/gzip-c", `gzip -c f`, "allow"},
	{"plain/patch", `patch -p1 -d build -i x.patch`, "allow"},
	{"plain/mktemp", `mktemp`, "allow"},
	{"plain/find", `find . -name '*.go' -newer go.mod`, "allow"},
	{"plain/curl", `curl -fsS -H 'Accept: x' https://example.com/api`, "allow"},
	{"plain/curl-o", `curl -o out.json https://example.com/api`, "allow"},
	{"plain/wget", `wget -q https://example.com/a.tgz`, "allow"},
	{"plain/readers", `cat .env /etc/hosts | sort | wc -l; ls /etc; grep -r x /srv`, "allow"},
}

// TestDecide_ProgramsWriteTheirOperands: a program that writes, creates
// or removes the files its operands name (cp's destination, mv's source
// and destination, tee, touch, sed -i, install, ln, dd of=, truncate,
// rsync, cp -t DIR, unzip -d DIR, tar -x -C DIR, git checkout --, patch,
// chmod, rm, perl -i, awk -i inplace, …) meets the Write and Edit rules
// as a redirection's target does, read as its manual reads its words: a
// destination folder is a write of the files under it, and an operand
// known only when it runs, or a tree whose files the gate cannot list
// that a rule's glob may reach, is reviewed. Allowing the program
// allows its operands; a read-only program writes nothing.
func TestDecide_ProgramsWriteTheirOperands(t *testing.T) {
	t.Run("narrow", func(t *testing.T) {
		decideRows(t, dataDirPolicies(t, operandsPolicy), operandRows)
	})
	t.Run("blanket", func(t *testing.T) {
		decideRows(t, dataDirPolicies(t, `
allow  = ["Bash"]
deny   = ["Edit(.env)", "Write(/etc/**)"]
review = ["Write(/srv/**)"]
`), operandRows)
	})
	t.Run("anywhere", func(t *testing.T) {
		// A rule that names a file anywhere: a tree whose files the gate
		// cannot list may hold one.
		decideRows(t, dataDirPolicies(t, `
allow = ["Bash(cp:*)", "Bash(rm:*)", "Bash(tar:*)", "Bash(sed:*)"]
deny  = ["Edit(**/.env)"]
`), []bypassRow{
			{"cp/sub", `cp x sub/.env`, "deny"},
			{"cp/into", `cp .env /tmp/x`, "deny"},
			{"sed/sub", `sed -i s/a/b/ a/b/.env`, "deny"},
			{"rm/tree", `rm -rf build`, "review"},
			{"tar/x", `tar -xf a.tar -C build`, "review"},
			{"plain/cp", `cp a b`, "allow"},
			{"plain/rm", `rm a.o`, "allow"},
			{"plain/tar", `tar -czf a.tgz src`, "allow"},
		})
	})
}

// TestDecide_PackageScriptWritesMeetFileRules: the files a package.json
// script that npm runs writes, by a redirection or by a program's
// operands, meet the Write and Edit deny rules; the runner's allow
// stands for the rest.
func TestDecide_PackageScriptWritesMeetFileRules(t *testing.T) {
	dir := t.TempDir()
	pkg := `{"scripts": {"env": "cp x .env", "out": "echo x > /etc/x", "untar": "tar -xf a.tar -C /etc", "build": "tsc && cp a dist/"}}`
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := ParsePolicy("p", []byte(`allow = ["Bash(npm run:*)"]
deny = ["Edit(.env)", "Write(/etc/**)"]`))
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]string{
		"npm run env":   ActionDeny,
		"npm run out":   ActionDeny,
		"npm run untar": ActionDeny,
		"npm run build": ActionAllow,
	} {
		c := Call{Tool: "Bash", Input: json.RawMessage(`{"command":` + strconv.Quote(cmd) + `}`), Dir: dir}
		if m := Decide([]*Policy{pol}, c); m.Action != want {
			t.Errorf("%q: %+v, want %q", cmd, m, want)
		}
	}
}
