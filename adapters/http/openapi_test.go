package httpapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPI checks /v1/openapi.json against the Server: every route is
// documented with its method, every documented operation is a route, and
// real answers carry the properties their schemas require.
func TestOpenAPI(t *testing.T) {
	e := newEnv(t)
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Required []string `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	e.get("/v1/openapi.json", 200, &doc)
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	var routes []string
	for _, r := range e.api.routes {
		routes = append(routes, r.method+" "+r.path)
		if !documented[r.method+" "+r.path] {
			t.Errorf("route %s %s is not in openapi.json", r.method, r.path)
		}
	}
	for op := range documented {
		if !slices.Contains(routes, op) {
			t.Errorf("openapi.json documents %s, which no handler serves", op)
		}
	}

	e.waitSeq(e.permission(sid(1), "Bash"))
	for path, schema := range map[string]string{
		"/v1/sessions":                      "SessionsPage",
		"/v1/sessions/" + sid(1):            "SessionReply",
		"/v1/sessions/" + sid(1) + "/audit": "Audit",
		"/v1/sessions/nosuch":               "Error",
		"/v1/usage?by=day":                  "UsageReport",
	} {
		want := 200
		if schema == "Error" {
			want = 404
		}
		var got map[string]json.RawMessage
		e.get(path, want, &got)
		for _, field := range doc.Components.Schemas[schema].Required {
			if _, ok := got[field]; !ok {
				t.Errorf("%s: answer lacks %q, which schema %s requires", path, field, schema)
			}
		}
	}
}
