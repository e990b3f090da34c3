package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestErrors_NotFoundNamesTheIDOnce: every answer about an id no row
// has names the id once ("session nosuch: not found: …"), so the board,
// which shows the message as it is, never doubles it.
func TestErrors_NotFoundNamesTheIDOnce(t *testing.T) {
	e := newEnv(t)
	e.waitSeq(e.prompt(sid(1), "p1"))
	for _, path := range []string{
		"/v1/sessions/nosuch",
		"/v1/sessions/nosuch?summary=true",
		"/v1/sessions/nosuch/audit",
		"/v1/sessions/nosuch/commands",
		"/v1/sessions/nosuch/at?seq=1",
		"/v1/sessions/nosuch/rederive",
		"/v1/commands/nosuch",
		"/v1/commands/nosuch/output",
	} {
		req, _ := http.NewRequest("GET", e.http.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body apiError
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if resp.StatusCode != http.StatusNotFound || strings.Count(body.Error, "nosuch") != 1 || !strings.Contains(body.Error, "not found") {
			t.Errorf("GET %s: %d %q; want 404 naming nosuch once, saying not found", path, resp.StatusCode, body.Error)
		}
	}
}
