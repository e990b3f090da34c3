package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// openAPIDoc is the OpenAPI 3.1 document of /v1, checked against the
// Server's routes by TestOpenAPI.
//
//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(openAPIDoc)
}

// queryParams maps each operation of openAPIDoc, by the mux pattern of
// its route ("GET /v1/events"), to the names of the query parameters it
// takes, as the document lists them (its own and its path's, a $ref to
// components/parameters followed). It panics if the embedded document
// does not parse: a build that embeds a broken one is a bug.
var queryParams = sync.OnceValue(func() map[string][]string {
	type param struct {
		Ref  string `json:"$ref"`
		Name string `json:"name"`
		In   string `json:"in"`
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]param `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		panic(fmt.Sprintf("httpapi: openapi.json: %v", err))
	}
	names := func(raw json.RawMessage) []string {
		var ps []param
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &ps); err != nil {
				panic(fmt.Sprintf("httpapi: openapi.json: parameters: %v", err))
			}
		}
		var out []string
		for _, p := range ps {
			if p.Ref != "" {
				p = doc.Components.Parameters[p.Ref[strings.LastIndexByte(p.Ref, '/')+1:]]
			}
			if p.In == "query" {
				out = append(out, p.Name)
			}
		}
		return out
	}
	m := map[string][]string{}
	for path, item := range doc.Paths {
		shared := names(item["parameters"])
		for method, op := range item {
			if method == "parameters" {
				continue
			}
			var o struct {
				Parameters json.RawMessage `json:"parameters"`
			}
			if err := json.Unmarshal(op, &o); err != nil {
				continue // not an operation (summary, description)
			}
			m[strings.ToUpper(method)+" "+path] = append(slices.Clone(shared), names(o.Parameters)...)
		}
	}
	return m
})

// knownQuery returns h behind a check that the request's query names
// only the parameters the route pattern takes (queryParams): another,
// a misspelt "limt" or a command-line flag's name ("from" for
// "after"), is refused with 400 naming it and what the endpoint takes,
// rather than ignored, which would answer a question that was not asked.
// A parameter given more than once (limit=1&limit=5000) is refused the
// same way: every parameter takes one value, and which of two counts is
// not a guess to make. So is a query that does not parse whole (a ";"
// between pairs, a bad %-escape), of which Go's reading keeps a part.
func (s *Server) knownQuery(pattern string, h http.HandlerFunc) http.HandlerFunc {
	takes := queryParams()[pattern]
	return func(w http.ResponseWriter, r *http.Request) {
		// r.URL.Query drops what does not parse (a pair holding ";",
		// which Go no longer reads as a separator, or a bad escape) and
		// answers from the rest: refused here instead, naming why.
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			s.fail(w, r, fmt.Errorf("%w: query %q: %v (separate parameters with \"&\", and escape \";\" as %%3B)", errBadRequest, r.URL.RawQuery, err))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(q)) {
			if slices.Contains(takes, k) {
				if n := len(q[k]); n > 1 {
					s.fail(w, r, fmt.Errorf("%w: query parameter %q given %d times: %s takes one value for it", errBadRequest, k, n, r.URL.Path))
					return
				}
				continue
			}
			what := "no query parameter"
			if len(takes) > 0 {
				what = strings.Join(takes, ", ")
			}
			s.fail(w, r, fmt.Errorf("%w: unknown query parameter %q: %s takes %s", errBadRequest, k, r.URL.Path, what))
			return
		}
		h(w, r)
	}
}
