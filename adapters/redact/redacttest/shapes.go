// Package redacttest makes fake secrets of the shapes the redaction rules
// must hide, for tests. Each is built at run time from pieces, so no
// source file holds a string that looks like a real secret.
package redacttest

import (
	"strings"
)

// Shape is one fake secret: Name says what it imitates, Text is what
// appears in the input, Secret is the part that must not survive
// redaction (Text itself, or the value inside it), and MultiLine marks
// shapes that span lines (key blocks).
type Shape struct {
	Name      string
	Text      string
	Secret    string
	MultiLine bool
}

// rep returns n bytes cycling through set, starting at seed, so every
// shape gets its own, high-entropy filler.
func rep(set string, n, seed int) string {
	var b strings.Builder
	for i := range n {
		b.WriteByte(set[(i*7+seed*13+i*i)%len(set)])
	}
	return b.String()
}

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	lowhex = "0123456789abcdef"
	b64    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
)

// j joins pieces: a prefix split in two keeps scanners from seeing it in
// this file.
func j(p ...string) string { return strings.Join(p, "") }

// Shapes returns the fake secrets, at least 40, each distinct.
func Shapes() []Shape {
	var out []Shape
	add := func(name, secret string) {
		out = append(out, Shape{Name: name, Text: secret, Secret: secret})
	}
	// assign adds text whose value is the secret.
	assign := func(name, text, secret string) {
		out = append(out, Shape{Name: name, Text: text, Secret: secret})
	}
	add("aws_access_key", j("AK", "IA", rep(upper, 16, 1)))
	add("aws_temp_key", j("AS", "IA", rep(upper, 16, 2)))
	add("github_classic", j("gh", "p_", rep(alnum, 36, 3)))
	add("github_oauth", j("gh", "o_", rep(alnum, 36, 4)))
	add("github_server", j("gh", "s_", rep(alnum, 36, 5)))
	add("github_fine_grained", j("github", "_pat_", rep(alnum, 22, 6), "_", rep(alnum, 59, 6)))
	add("gitlab_pat", j("gl", "pat-", rep(alnum, 20, 7)))
	add("slack_bot", j("xo", "xb-", rep("0123456789", 12, 8), "-", rep("0123456789", 12, 9), "-", rep(alnum, 24, 9)))
	add("slack_user", j("xo", "xp-", rep("0123456789", 12, 10), "-", rep(alnum, 24, 10)))
	add("stripe_live", j("sk", "_live_", rep(alnum, 24, 11)))
	add("stripe_restricted", j("rk", "_live_", rep(alnum, 24, 12)))
	add("stripe_test", j("sk", "_test_", rep(alnum, 24, 13)))
	add("google_api_key", j("AI", "za", rep(b64url, 35, 14)))
	add("npm_token", j("np", "m_", rep(alnum, 36, 15)))
	add("anthropic_key", j("sk-", "ant-api03-", rep(b64url, 40, 16)))
	add("openai_key", j("sk-", "proj-", rep(alnum, 40, 17)))
	add("openai_legacy", j("sk-", rep(alnum, 48, 18)))
	add("jwt", j("ey", "J", rep(b64url, 20, 19), ".ey", "J", rep(b64url, 30, 20), ".", rep(b64url, 43, 21)))
	add("sendgrid", j("SG", ".", rep(b64url, 22, 22), ".", rep(b64url, 43, 22)))
	add("digitalocean", j("dop", "_v1_", rep(lowhex, 64, 23)))
	add("pypi", j("pypi-", "AgEIcHlwaS5vcmc", rep(b64url, 60, 24)))
	add("shopify", j("shp", "at_", rep(lowhex, 32, 25)))
	add("age_secret", j("AGE-", "SECRET-KEY-1", rep("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58, 26)))
	add("hashicorp_vault", j("hv", "s.", rep(b64url, 90, 27)))
	add("doppler", j("dp", ".pt.", rep(alnum, 43, 28)))
	add("linear", j("lin", "_api_", rep(alnum, 40, 29)))
	add("postman", j("PM", "AK-", rep(lowhex, 24, 30), "-", rep(lowhex, 34, 30)))
	add("huggingface", j("h", "f_", rep("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 34, 31)))
	add("grafana_sa", j("gl", "sa_", rep(alnum, 32, 32), "_", rep(lowhex, 8, 32)))
	add("databricks", j("dap", "i", rep(lowhex, 32, 33)))
	add("bearer_header", j("Authorization: Bea", "rer ", rep(alnum, 40, 34)))
	out[len(out)-1].Secret = out[len(out)-1].Text[len("Authorization: Bearer "):]
	basic := rep(b64, 32, 35)
	assign("basic_auth", j("Authorization: Ba", "sic ", basic), basic)
	pw := rep(alnum, 18, 36)
	assign("url_credentials", j("postgres://admin:", pw, "@db.internal:5432/app"), pw)
	key := rep(b64, 64, 37) + "=="
	assign("azure_account_key", j("DefaultEndpointsProtocol=https;AccountName=store;Account", "Key=", key, ";EndpointSuffix=core.windows.net"), key)
	v := rep(alnum, 20, 38)
	assign("env_password", j("DB_PASS", "WORD=", v), v)
	v = rep(alnum, 20, 39)
	assign("env_api_key", j("export SERVICE_API", "_KEY=", v), v)
	v = rep(alnum, 20, 40)
	assign("yaml_secret", j("client_sec", "ret: ", v), v)
	v = rep(alnum, 20, 41)
	assign("json_token", j(`{"auth_tok`, `en": "`, v, `"}`), v)
	v = rep(alnum, 20, 42)
	assign("json_password_spaces", j(`{"pass`, `word": "`, v[:10], " ", v[10:], `"}`), v[:10])
	v = rep(b64, 40, 43)
	assign("aws_secret_access_key", j("aws_secret_", "access_key = ", v), v)
	body := rep(b64, 64, 44) + "\n" + rep(b64, 64, 45) + "\n" + rep(b64, 20, 46)
	out = append(out, Shape{Name: "pem_rsa", Text: j("-----BEGIN RSA PRI", "VATE KEY-----\n", body, "\n-----END RSA PRI", "VATE KEY-----"), Secret: rep(b64, 64, 45), MultiLine: true})
	body = rep(b64, 64, 47) + "\n" + rep(b64, 64, 48)
	out = append(out, Shape{Name: "pem_openssh", Text: j("-----BEGIN OPENSSH PRI", "VATE KEY-----\n", body, "\n-----END OPENSSH PRI", "VATE KEY-----"), Secret: rep(b64, 64, 48), MultiLine: true})
	body = rep(b64, 64, 49) + "\n" + rep(b64, 64, 50)
	out = append(out, Shape{Name: "pgp_private", Text: j("-----BEGIN PGP PRI", "VATE KEY BLOCK-----\n\n", body, "\n-----END PGP PRI", "VATE KEY BLOCK-----"), Secret: rep(b64, 64, 50), MultiLine: true})
	return out
}
