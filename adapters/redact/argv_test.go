package redact_test

import (
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/redact"
)

// TestSecretArgs: flags that take a secret, by name pattern and for the
// tools whose single-letter flags do, are found in every spelling (the
// next element, after "=", attached, in a cluster, in a shell script),
// naming the element and the flag, and RedactArgs keeps none of the
// values; ordinary commands with the same letters are left alone.
func TestSecretArgs(t *testing.T) {
	const pw = "hunter2hunter2"
	for _, tc := range []struct {
		argv  string // split at spaces; '·' inside a word stands for a space
		index int
		flag  string
	}{
		{"curl -u user:" + pw + " http://x", 2, "-u (curl)"},
		{"curl -sSu user:" + pw + " http://x", 2, "-u (curl)"},
		{"/usr/bin/curl -uuser:" + pw + " http://x", 1, "-u (curl)"},
		{"curl --user=user:" + pw + " http://x", 1, "--user (curl)"},
		{"curl --proxy-user user:" + pw + " http://x", 2, "--proxy-user (curl)"},
		{"echo --token " + pw, 2, "--token"},
		{"echo --token=" + pw, 1, "--token"},
		{"sshpass -p " + pw + " ssh h", 2, "-p (sshpass)"},
		{"sshpass -p" + pw + " ssh -p 2222 h", 1, "-p (sshpass)"},
		{"sudo mysql -uroot -p" + pw + " db", 3, "-p (mysql)"},
		{"mysqldump --password=" + pw + " db", 1, "--password"},
		{"tool --db-password " + pw, 2, "--db-password"},
		{"tool --client-secret " + pw, 2, "--client-secret"},
		{"tool --api-key " + pw, 2, "--api-key"},
		{"tool --apikey=" + pw, 1, "--apikey"},
		{"tool --auth user:" + pw, 2, "--auth"},
		{"tool --basic-auth user:" + pw, 2, "--basic-auth"},
		{"tool --passphrase " + pw, 2, "--passphrase"},
		{"tool --access-token " + pw, 2, "--access-token"},
		{"tool --credentials " + pw, 2, "--credentials"},
		{"vault write -secret-id=" + pw, 2, "-secret-id"},
		{"tool -password " + pw, 2, "-password"},
		{"redis-cli -a " + pw + " ping", 2, "-a (redis-cli)"},
		{"zip -P " + pw + " out.zip f", 2, "-P (zip)"},
		{"7z a -p" + pw + " out.7z f", 2, "-p (7z)"},
		{"ldapsearch -x -w " + pw, 3, "-w (ldapsearch)"},
		{"docker login -u me -p " + pw + " reg", 5, "-p (docker)"},
		{"openssl rsa -passin pass:" + pw, 3, "pass: (openssl)"},
		{"docker run -e MYSQL_PWD=" + pw + " img", 3, "MYSQL_PWD"},
		{"env API_TOKEN=" + pw + " tool", 1, "API_TOKEN"},
		{"git config --global github.token " + pw, 4, "github.token (config)"},
		{"aws configure set aws_secret_access_key " + pw, 4, "aws_secret_access_key (config)"},
		{"npm config set //registry.npmjs.org/:_authToken " + pw, 4, "//registry.npmjs.org/:_authToken (config)"},
		{"gh secret set API_TOKEN -b " + pw, 5, "-b (gh)"},
		{"gh secret set API_TOKEN --body=" + pw, 4, "--body (gh)"},
		{"sh -c curl·-u·user:" + pw + "·http://x", 2, "-u (curl)"},
		{"bash -lc cd·/w;·sshpass·-p·'" + pw + "'·ssh·h", 2, "-p (sshpass)"},
		{"sh -c x=$(echo·--token·\"" + pw + "\")", 2, "--token"},
	} {
		argv := strings.Split(tc.argv, " ")
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], "·", " ")
		}
		got := redact.SecretArgs(argv)
		if len(got) == 0 || got[0].Index != tc.index || got[0].Flag != tc.flag {
			t.Errorf("%q: found %+v, want argv[%d] by %s", argv, got, tc.index, tc.flag)
			continue
		}
		shown := strings.Join(redact.RedactArgs(nil, argv), " ")
		if strings.Contains(shown, pw) || !strings.Contains(shown, "[REDACTED:argument]") {
			t.Errorf("%q: RedactArgs shows %q", argv, shown)
		}
	}
	for _, argv := range []string{
		"git log -p", "grep -p x f", "ls -p", "ssh -p 2222 h", "scp -P 2222 f h:", "curl -u user http://x",
		"curl -o out -sS http://x", "mysql -p db", "mysql -D app_db", "mysql -u root -h db -P 3306", "docker run -p 8080:80 img",
		"git log --author=alice", "docker login --password-stdin reg", "tool --password-file /run/pw", "tool --token-file tok.txt",
		"tool --auth-type basic", "tool --no-password x", "ansible --ask-pass all", "gh auth login --with-token",
		"tool --token -", "tool --token /run/secrets/tok", "tool --token", "tool --auth --verbose", "curl --key client.pem http://x",
		"tool --pass-through x", "tool --token-ttl 3600", "docker build --secret id=npm,src=/home/me/.npmrc .",
		"env SSH_AUTH_SOCK=/tmp/a DB_PASSWORD_FILE=/run/pw AWS_ACCESS_KEY_ID=AKIDEXAMPLE tool", "make TOKEN_LEN=5 KEY=",
		"sh -c git·commit·-m·'add·--token·flag'", "sh -c echo·--token", "sshpass -f pwfile ssh -p 2222 h",
		"sh script.sh -p 2222", "git config user.name alice", "git config credential.helper store", "git config --get github.token",
		"npm config set registry https://r.example", "gh pr create --body text", "sh -c set·-e;·make", "gh secret set API_TOKEN", "tar -xpf a.tar", "echo sh -c", "aws ec2 tag --tags Key=Name,Value=web",
	} {
		words := strings.Split(argv, " ")
		for i := range words {
			words[i] = strings.ReplaceAll(words[i], "·", " ")
		}
		if got := redact.SecretArgs(words); got != nil {
			t.Errorf("%q: found %+v, want nothing", words, got)
		}
	}
}

// TestSecretEnv: environment names that hold secrets, by pattern, and
// names that only point at one or say something about it.
func TestSecretEnv(t *testing.T) {
	for _, n := range []string{"MYSQL_PWD", "PGPASSWORD", "DB_PASSWORD", "GITHUB_TOKEN", "HF_TOKEN", "NPM_AUTH_TOKEN",
		"AWS_SECRET_ACCESS_KEY", "STRIPE_KEY", "OPENAI_API_KEY", "CLIENT_SECRET", "VAULT_SECRET_ID", "SSHPASS_PASS",
		"REDIS_AUTH", "GPG_PASSPHRASE", "GOOGLE_CREDENTIALS", "apikey", "ADMIN_PIN"} {
		if !redact.SecretEnv(n) {
			t.Errorf("SecretEnv(%s) = false", n)
		}
	}
	for _, n := range []string{"PATH", "HOME", "TOKENIZERS_PARALLELISM", "SSH_AUTH_SOCK", "DB_PASSWORD_FILE", "AWS_ACCESS_KEY_ID",
		"GIT_AUTHOR_NAME", "GIT_ASKPASS", "PASSWORD_STORE_DIR", "KEYBOARD", "MONKEY", "TOKEN_URL", "BYPASS_CACHE"} {
		if redact.SecretEnv(n) {
			t.Errorf("SecretEnv(%s) = true", n)
		}
	}
	if redact.SecretAssignment("GITHUB_TOKEN", "") || redact.SecretAssignment("NO_AUTH", "1") || !redact.SecretAssignment("MYSQL_PWD", "C0rrectH0rse") {
		t.Error("SecretAssignment: empty and boolean values are no secrets; a password is")
	}
}
