package redact

import (
	"path"
	"strings"
)

// argRedacted replaces the value of a secret-bearing argument (RedactArgs).
const argRedacted = "[REDACTED:argument]"

// ArgSecret is a command-line argument that carries a secret by where
// it stands, whatever the secret looks like: the value of a flag named
// for one (--password, --token, sshpass -p), or an environment
// assignment to a secret name (MYSQL_PWD=…) passed as an argument.
type ArgSecret struct {
	// Index is the argv element holding the value: the flag's own
	// (--token=x, -px), the one after it (--token x), or a shell script
	// (sh -c '…') that holds such a flag.
	Index int
	// Flag names what makes it a secret, for an error message: the flag
	// ("--token", "-p (sshpass)"), or the variable name of an
	// assignment; never the value.
	Flag string
	// InScript is true when the flag stands in the shell script that
	// argv[Index] is (sh -c SCRIPT).
	InScript bool

	keep  int    // bytes of the element kept before the value; -1 in a script
	value string // the value as the script's words read it (InScript)
}

// SecretArgs returns the arguments of argv that carry a secret by where
// they stand, in order; nil when there are none. The rules, by kind
// rather than by sample:
//
//   - a long flag (--name, or a single-dash -name of four letters or
//     more) whose name says it takes a secret: one of its words holds
//     password, passwd, passphrase, secret, credential or apikey
//     (--db-password, --client-secret, --api-key), or its last word is
//     pass, pwd, token, auth, authorization or bearer (--token,
//     --auth-token, --basic-auth). Its value follows "=" or is the next
//     element (unless that is a flag). Not a secret: a flag whose last
//     word names where the secret is or something about it (file, path,
//     dir, stdin, fd, env, url, type, method, name, user, id-less
//     helpers: --password-file, --password-stdin, --auth-type,
//     --token-ttl), one whose first word makes it a switch (--no-auth,
//     --ask-pass, --with-token), and a value that points elsewhere ("-",
//     a path starting with /, ./, ../ or ~/, env:…, file:…, fd:…, a
//     docker --secret id=…,src=…) or is a boolean word (true, 0, …);
//   - a single-letter flag only for the tools where it takes a secret
//     (single letters are ambiguous: git log -p, ssh -p 2222): sshpass
//     -p, the mysql and mariadb clients' -p<value> (attached; a
//     separate -p asks), curl -u/-U/--user/--proxy-user user:password
//     (with a colon and something after it), redis-cli -a, zip and
//     unzip -P, 7z -p<value>, the ldap tools' -w, sqlcmd and bcp -P,
//     the mongo tools' -p, and docker, podman and nerdctl login -p; the
//     tool is argv[0] or any later element naming it (sudo mysql -px);
//   - the value after a key named for a secret in a configuration
//     setter (after a "config", "set" or "config:set" word: git config
//     github.token VALUE, aws configure set aws_secret_access_key VALUE,
//     npm config set //registry/:_authToken VALUE), and gh secret set's
//     -b/--body;
//   - an openssl password argument "pass:<value>";
//   - an environment assignment NAME=value with an upper-case NAME that
//     SecretEnv takes for a secret (docker run -e MYSQL_PWD=x, env
//     API_TOKEN=x cmd);
//   - the same inside a shell script: the script of sh, bash, dash,
//     zsh, ksh, ash or mksh -c SCRIPT is cut into simple commands and
//     words (quotes, backslashes, ; & | ( ) ` and newlines read as a
//     shell reads them, expansions not made), each command checked by
//     these rules.
//
// Values of no telling flag and no known shape are left to the
// redaction rules (Redactor.Redact).
func SecretArgs(argv []string) []ArgSecret {
	var out []ArgSecret
	for _, h := range scanWords(argv, 0) {
		s := ArgSecret{Index: h.word, Flag: h.flag, keep: h.keep, value: h.value}
		if h.keep < 0 {
			s.InScript = true
		}
		out = append(out, s)
	}
	return out
}

// RedactArgs returns a copy of argv with the value of every argument
// SecretArgs finds replaced by "[REDACTED:argument]" (the flag itself
// kept: --token=[REDACTED:argument], -p[REDACTED:argument]; in a shell
// script, the value's text, or the whole script when the value is not
// found as written), then every element redacted by r (nil:
// Default()). For showing a request (a log line), never for running it.
func RedactArgs(r *Redactor, argv []string) []string {
	if r == nil {
		r = Default()
	}
	out := make([]string, len(argv))
	copy(out, argv)
	for _, s := range SecretArgs(argv) {
		a := out[s.Index]
		switch {
		case s.keep >= 0 && s.keep <= len(a):
			a = a[:s.keep] + argRedacted
		case s.value != "" && strings.Contains(a, s.value):
			a = strings.ReplaceAll(a, s.value, argRedacted)
		default:
			a = argRedacted
		}
		out[s.Index] = a
	}
	for i, a := range out {
		out[i] = r.Redact(a)
	}
	return out
}

// hit is a secret found in a list of words: word's value, after keep
// bytes of it (-1: somewhere in the script word is).
type hit struct {
	word  int
	keep  int
	flag  string
	value string
}

// toolFlag is how a tool's single-letter flag takes a secret.
type toolFlag struct {
	next     bool   // the value may be the next word
	attached bool   // the value may follow the letter in the same word
	colon    bool   // only a value holding "user:password" is a secret
	after    string // the flag counts only after this word (login)
}

var (
	mysqlP = map[string]toolFlag{"-p": {attached: true}}
	curlU  = map[string]toolFlag{"-u": {next: true, attached: true, colon: true}, "-U": {next: true, attached: true, colon: true},
		"--user": {next: true, attached: true, colon: true}, "--proxy-user": {next: true, attached: true, colon: true}}
	nextOrAttached = func(letter string) map[string]toolFlag {
		return map[string]toolFlag{letter: {next: true, attached: true}}
	}
	loginP = map[string]toolFlag{"-p": {next: true, attached: true, after: "login"}}
)

// toolFlags lists, by tool name (the base name of the element naming
// it), the flags that take a secret only in that tool.
var toolFlags = map[string]map[string]toolFlag{
	"sshpass": nextOrAttached("-p"),
	"mysql":   mysqlP, "mysqldump": mysqlP, "mysqladmin": mysqlP, "mysqlimport": mysqlP, "mysqlshow": mysqlP,
	"mysqlcheck": mysqlP, "mysqlpump": mysqlP, "mysqlbinlog": mysqlP, "mariadb": mysqlP, "mariadb-dump": mysqlP,
	"mariadb-admin": mysqlP, "mariadb-import": mysqlP, "mariadb-check": mysqlP,
	"curl":      curlU,
	"redis-cli": nextOrAttached("-a"),
	"zip":       {"-P": {next: true}}, "unzip": {"-P": {next: true}},
	"7z": {"-p": {attached: true}}, "7za": {"-p": {attached: true}}, "7zz": {"-p": {attached: true}}, "7zr": {"-p": {attached: true}},
	"ldapsearch": nextOrAttached("-w"), "ldapmodify": nextOrAttached("-w"), "ldapadd": nextOrAttached("-w"),
	"ldapdelete": nextOrAttached("-w"), "ldapwhoami": nextOrAttached("-w"), "ldappasswd": nextOrAttached("-w"),
	"ldapcompare": nextOrAttached("-w"), "ldapmodrdn": nextOrAttached("-w"), "ldapexop": nextOrAttached("-w"),
	"sqlcmd": nextOrAttached("-P"), "bcp": nextOrAttached("-P"),
	"mongosh": nextOrAttached("-p"), "mongo": nextOrAttached("-p"), "mongodump": nextOrAttached("-p"),
	"mongorestore": nextOrAttached("-p"), "mongoexport": nextOrAttached("-p"), "mongoimport": nextOrAttached("-p"),
	"docker": loginP, "podman": loginP, "nerdctl": loginP,
	"gh": {"-b": {next: true, attached: true, after: "secret"}, "--body": {next: true, attached: true, after: "secret"}},
}

// shells are the shells whose -c script is read as commands.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true, "mksh": true}

// scanWords finds the secrets of one command's words (argv, or one
// simple command of a script). depth bounds scripts within scripts.
func scanWords(words []string, depth int) []hit {
	var out []hit
	tool, toolAt := "", -1
	seen := map[string]bool{} // words after the tool (login)
	setter := false           // a config or set word came: KEY VALUE follows
	for i := 0; i < len(words); i++ {
		w := words[i]
		base := path.Base(w)
		if _, ok := toolFlags[base]; ok && !strings.HasPrefix(w, "-") {
			tool, toolAt = base, i
			clear(seen)
			continue
		}
		if tool == "sshpass" && !strings.HasPrefix(w, "-") && i > toolAt && !isFlagWithArg(words[i-1], "fdP") {
			tool = "" // sshpass's own options end at its command
		}
		if shells[base] && !strings.HasPrefix(w, "-") && depth < 4 {
			if j := scriptWord(words, i); j > 0 {
				for _, cmd := range shellCommands(words[j]) {
					for _, h := range scanWords(cmd, depth+1) {
						out = append(out, hit{word: j, keep: -1, flag: h.flag, value: cmdValue(cmd, h)})
					}
				}
				i = j
				continue
			}
		}
		seen[w] = true
		if w == "config" || w == "set" || w == "config:set" {
			setter = true
			continue
		}
		if setter && !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") && i+1 < len(words) &&
			(SecretKey(w) || secretName(nameWords(w))) && !(len(words[i+1]) > 1 && words[i+1][0] == '-') && !notSecret(words[i+1]) {
			out = append(out, hit{word: i + 1, keep: 0, flag: w + " (config)"})
			i++
			continue
		}
		if h, skip, ok := toolHit(tool, seen, words, i); ok {
			out = append(out, h...)
			i += skip
			continue
		}
		if strings.HasPrefix(w, "pass:") && len(w) > len("pass:") {
			out = append(out, hit{word: i, keep: len("pass:"), flag: "pass: (openssl)"})
			continue
		}
		if name, v, ok := strings.Cut(w, "="); ok && envName(name) && SecretAssignment(name, v) {
			out = append(out, hit{word: i, keep: len(name) + 1, flag: name})
			continue
		}
		if h, skip, ok := flagHit(words, i); ok {
			out = append(out, h)
			i += skip
		}
	}
	return out
}

// cmdValue returns the text of h's value within cmd (a script's
// command), for finding it in the script.
func cmdValue(cmd []string, h hit) string {
	if h.word >= len(cmd) {
		return ""
	}
	w := cmd[h.word]
	if h.keep >= 0 && h.keep <= len(w) {
		return w[h.keep:]
	}
	return h.value
}

// isFlagWithArg reports whether w is a single-letter flag among letters.
func isFlagWithArg(w, letters string) bool {
	return len(w) == 2 && w[0] == '-' && strings.IndexByte(letters, w[1]) >= 0
}

// scriptWord returns the index of the script of the shell named at
// words[i] when its options hold -c, else -1.
func scriptWord(words []string, i int) int {
	c := false
	for j := i + 1; j < len(words); j++ {
		w := words[j]
		if w == "--" {
			continue
		}
		if len(w) > 1 && (w[0] == '-' || w[0] == '+') && !strings.HasPrefix(w, "--") {
			if strings.ContainsRune(w[1:], 'c') {
				c = true
			}
			if strings.ContainsRune(w[1:], 'o') { // -o OPTION
				j++
			}
			continue
		}
		if strings.HasPrefix(w, "--") {
			continue
		}
		if c {
			return j
		}
		return -1
	}
	return -1
}

// toolHit checks words[i] against the single-letter flags of tool. It
// returns the hits and how many words after i they consume.
func toolHit(tool string, seen map[string]bool, words []string, i int) ([]hit, int, bool) {
	flags := toolFlags[tool]
	if flags == nil {
		return nil, 0, false
	}
	w := words[i]
	for name, f := range flags {
		if f.after != "" && !seen[f.after] {
			continue
		}
		var keep int
		switch {
		case strings.HasPrefix(name, "--"):
			if w == name {
				keep = len(w)
			} else if strings.HasPrefix(w, name+"=") {
				keep = len(name) + 1
			} else {
				continue
			}
		default:
			// A cluster of letters: -sSu user:pass, -uuser:pass.
			if len(w) < 2 || w[0] != '-' || w[1] == '-' {
				continue
			}
			// A flag whose value is only attached stands first
			// (mysql -D app_db is no -p).
			k := strings.IndexByte(w[1:], name[1])
			if k < 0 || !letters(w[1:1+k]) || k > 0 && !f.next {
				continue
			}
			keep = 1 + k + 1
		}
		if keep < len(w) { // the value is attached
			v := w[keep:]
			if strings.HasPrefix(name, "--") || f.attached {
				if !f.colon || hasPassword(v) {
					return []hit{{word: i, keep: keep, flag: name + " (" + tool + ")"}}, 0, true
				}
			}
			continue
		}
		if f.next && i+1 < len(words) {
			v := words[i+1]
			if !f.colon || hasPassword(v) {
				return []hit{{word: i + 1, keep: 0, flag: name + " (" + tool + ")"}}, 1, true
			}
		}
	}
	return nil, 0, false
}

// letters reports whether s is ASCII letters only.
func letters(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// hasPassword reports whether v is user:password with a password.
func hasPassword(v string) bool {
	_, p, ok := strings.Cut(v, ":")
	return ok && p != ""
}

// flagHit checks words[i] as a long flag named for a secret.
func flagHit(words []string, i int) (hit, int, bool) {
	w := words[i]
	var name string
	switch {
	case strings.HasPrefix(w, "--"):
		name = w[2:]
	case strings.HasPrefix(w, "-"):
		name = w[1:]
		if n, _, _ := strings.Cut(name, "="); len(n) < 4 {
			return hit{}, 0, false
		}
	default:
		return hit{}, 0, false
	}
	name, v, eq := strings.Cut(name, "=")
	if !flagName(name) || !SecretFlag(name) {
		return hit{}, 0, false
	}
	flag := w[:len(w)-len(v)]
	if eq {
		flag = flag[:len(flag)-1]
		if notSecret(v) {
			return hit{}, 0, false
		}
		return hit{word: i, keep: len(w) - len(v), flag: flag}, 0, true
	}
	if i+1 >= len(words) {
		return hit{}, 0, false
	}
	v = words[i+1]
	if len(v) > 1 && v[0] == '-' || notSecret(v) {
		return hit{}, 0, false
	}
	return hit{word: i + 1, keep: 0, flag: w}, 1, true
}

// flagName reports whether s can be a flag's name: letters, digits and
// - _ . only.
func flagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// envName reports whether s is an upper-case environment variable name.
func envName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// notSecret reports whether a flag's or variable's value v cannot be the
// secret itself: empty, a boolean word, or a pointer to where the secret
// is ("-" for stdin, a path, env:NAME, file:PATH, fd:N, docker's
// id=…,src=…).
func notSecret(v string) bool {
	switch strings.ToLower(v) {
	case "", "-", "0", "1", "true", "false", "yes", "no", "on", "off", "none", "null", "stdin":
		return true
	}
	for _, p := range []string{"/", "./", "../", "~/", "env:", "file:", "fd:", "id=", "src=", "source="} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// nameWords splits a flag or variable name into lower-case words at -,
// _ and . .
func nameWords(name string) []string {
	return strings.FieldsFunc(asciiLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' })
}

// strongWords make any name holding one of them name a secret.
var strongWords = []string{"password", "passwd", "passphrase", "secret", "credential", "apikey"}

// lastWords name a secret as the last word of a name.
var lastWords = map[string]bool{"pass": true, "pwd": true, "token": true, "tokens": true, "auth": true,
	"authorization": true, "bearer": true, "key": true, "pin": true}

// whereWords, as a name's last word, say where a secret is or something
// about it, not the secret: --password-file, DB_PASSWORD_FILE,
// --auth-type, SSH_AUTH_SOCK.
var whereWords = map[string]bool{"file": true, "files": true, "path": true, "dir": true, "stdin": true, "fd": true, "env": true,
	"cmd": true, "command": true, "helper": true, "prompt": true, "type": true, "method": true, "mode": true,
	"url": true, "uri": true, "endpoint": true, "host": true, "port": true, "sock": true, "socket": true,
	"length": true, "len": true, "size": true, "ttl": true, "timeout": true, "expiry": true, "expires": true,
	"name": true, "names": true, "user": true, "username": true, "store": true, "plugin": true, "provider": true,
	"format": true, "policy": true, "scope": true, "scopes": true, "header": true, "id": true}

// switchWords, as a flag's first word, make it a switch that takes no
// value: --no-auth, --ask-pass, --with-token.
var switchWords = map[string]bool{"no": true, "ask": true, "prompt": true, "with": true, "without": true, "skip": true,
	"disable": true, "enable": true, "require": true, "allow": true, "show": true, "hide": true, "print": true,
	"generate": true, "keep": true, "save": true, "store": true}

// secretName reports whether a name's words name a secret.
func secretName(words []string) bool {
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	if last == "id" && len(words) > 1 && words[len(words)-2] == "secret" {
		return true // a secret id (client_secret_id, vault's -secret-id)
	}
	if whereWords[last] {
		return false
	}
	for _, w := range words {
		for _, s := range strongWords {
			if strings.Contains(w, s) {
				return true
			}
		}
	}
	return lastWords[last] || strings.HasSuffix(last, "token")
}

// SecretFlag reports whether a command-line flag's name (without its
// dashes: "db-password", "token", "api_key") says the flag takes a
// secret; see SecretArgs for the rule. "key" alone, as a flag, does not
// (--key is often a key file's path).
func SecretFlag(name string) bool {
	words := nameWords(name)
	if len(words) == 0 || switchWords[words[0]] && len(words) > 1 {
		return false
	}
	if words[len(words)-1] == "key" && !strings.Contains(asciiLower(name), "api") {
		return false
	}
	return secretName(words)
}

// SecretEnv reports whether an environment variable's name says it holds
// a secret: SecretKey's names (…PASSWORD, …_TOKEN, …SECRET, …API_KEY),
// a word holding password, passwd, passphrase, secret, credential or
// apikey anywhere (PGPASSWORD, AWS_SECRET_ACCESS_KEY), or a last word
// PASS, PWD, TOKEN, AUTH, KEY or PIN (MYSQL_PWD, STRIPE_KEY, NPM_AUTH),
// unless the last word says where the secret is or something about it
// (…_FILE, …_PATH, …_DIR, …_URL, …_SOCK, …_TYPE, …_ID: DB_PASSWORD_FILE,
// SSH_AUTH_SOCK, AWS_ACCESS_KEY_ID).
func SecretEnv(name string) bool {
	words := nameWords(name)
	if n := len(words); n > 0 && whereWords[words[n-1]] && !(words[n-1] == "id" && n > 1 && words[n-2] == "secret") {
		return false
	}
	return SecretKey(name) || secretName(words)
}

// SecretAssignment reports whether NAME=value, in a command's
// environment or argv, assigns a secret: SecretEnv(name), and a value
// that can be one (not empty, not a boolean word, not a pointer to where
// the secret is: "-", a path starting with /, ./, ../ or ~/, env:…,
// file:…, fd:…).
func SecretAssignment(name, value string) bool {
	return SecretEnv(name) && !notSecret(value)
}

// shellCommands cuts a shell script into simple commands of words, as
// sh reads quotes ('…', "…" with \ escapes), backslashes and the
// operators ; & | ( ) ` and newlines (which end a command) and comments;
// no expansion is made.
func shellCommands(script string) [][]string {
	var cmds [][]string
	var cmd []string
	var w strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			cmd = append(cmd, w.String())
			w.Reset()
			inWord = false
		}
	}
	endCmd := func() {
		endWord()
		if len(cmd) > 0 {
			cmds = append(cmds, cmd)
			cmd = nil
		}
	}
	for i := 0; i < len(script); i++ {
		c := script[i]
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '`':
			endCmd()
		case c == '#' && !inWord:
			for i < len(script) && script[i] != '\n' {
				i++
			}
			endCmd()
		case c == '\\':
			inWord = true
			if i+1 < len(script) {
				i++
				if script[i] != '\n' {
					w.WriteByte(script[i])
				}
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(script[i+1:], '\'')
			if j < 0 {
				j = len(script) - i - 1
			}
			w.WriteString(script[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(script) && script[i] != '"'; i++ {
				if script[i] == '\\' && i+1 < len(script) && strings.IndexByte("\"\\$`\n", script[i+1]) >= 0 {
					i++
				}
				w.WriteByte(script[i])
			}
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	endCmd()
	return cmds
}
