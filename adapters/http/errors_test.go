package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestErrors_NoGoInternalText: bad bodies and ids are answered in the
// request's terms, never with Go types, package prefixes or escaped bytes.
func TestErrors_NoGoInternalText(t *testing.T) {
	e := newEnv(t)
	e.waitSeq(e.prompt(sid(1), "p1"))
	for _, tt := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"POST", "/v1/reviews/r1", `[1,2]`, 400, `body: must be a JSON object with the fields \"session\", \"verdict\", \"reason\", \"by\", got an array`},
		{"POST", "/v1/reviews/r1", `"x"`, 400, `got a string`},
		{"POST", "/v1/reviews/r1", `{"verdict":3}`, 400, `field \"verdict\": want a string, got a number`},
		{"POST", "/v1/reviews/r1", `{"verdict":`, 400, `not valid JSON`},
		{"GET", "/v1/sessions/nosuch", "", 404, `session nosuch: not found`},
		{"GET", "/v1/sessions/%FF%FE", "", 400, `session id is not valid: it holds a byte that is not printable ASCII at offset 0`},
		{"GET", "/v1/sessions/%FF%FE/audit", "", 400, `session id is not valid`},
	} {
		req, _ := http.NewRequest(tt.method, e.http.URL+tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s %s %s: %d %s, want %d holding %s", tt.method, tt.path, tt.body, resp.StatusCode, b, tt.code, tt.want)
		}
		for _, bad := range []string{"json:", "Go value", "httpapi.", "events:", `\\x`, "unmarshal"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s %s: Go-internal text %q in %s", tt.method, tt.path, bad, b)
			}
		}
	}
}

// TestDuplicateKeys: a body naming a field twice, at any depth and in
// any case (encoding/json would keep the last), is refused with 400
// naming the key, and nothing is appended.
func TestDuplicateKeys(t *testing.T) {
	e := newEnv(t)
	e.waitSeq(e.prompt(sid(1), "p1"))
	last, _ := e.log.LastSeq(t.Context())
	for _, c := range []struct{ path, body, key string }{
		{"/v1/observations", `{"harness":"h","id":"x","session":"r1","kind":"k","signals":[{"kind":"prompt"}],"harness":"evil"}`, `\"harness\"`},
		{"/v1/observations", `{"harness":"h","id":"x","session":"r1","kind":"k","signals":[{"kind":"prompt"}],"Harness":"evil"}`, `\"Harness\"`},
		{"/v1/observations", `{"harness":"h","id":"x","session":"r1","kind":"k","meta":{"model":"a","model":"b"},"signals":[{"kind":"prompt"}]}`, `\"meta.model\"`},
		{"/v1/observations", `{"harness":"h","id":"x","session":"r1","kind":"k","signals":[{"kind":"prompt","kind":"text"}]}`, `\"signals[0].kind\"`},
		{"/v1/reviews/r1", `{"session":"` + sid(1) + `","verdict":"deny","verdict":"allow"}`, `\"verdict\"`},
	} {
		var ae apiError
		e.do("POST", c.path, c.body, nil, 400, &ae)
		if ae.Code != "bad_request" || !strings.Contains(ae.Error, "duplicate key "+strings.ReplaceAll(c.key, `\"`, `"`)) {
			t.Errorf("%s %s: %+v, want bad_request naming %s", c.path, c.body, ae, c.key)
		}
	}
	if now, _ := e.log.LastSeq(t.Context()); now != last {
		t.Errorf("refused bodies appended: last seq %d → %d", last, now)
	}
}
