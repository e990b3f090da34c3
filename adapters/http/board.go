package httpapi

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// boardFiles is the board: plain HTML, CSS and JavaScript served as they
// are (no build step, no fonts or scripts from elsewhere).
//
//go:embed board
var boardFiles embed.FS

// board serves the board's files; any path that is not a file gets the
// page, whose script routes by the URL's fragment.
func (s *Server) board(w http.ResponseWriter, r *http.Request) {
	sub, _ := fs.Sub(boardFiles, "board")
	name := strings.TrimPrefix(r.URL.Path, "/")
	if name == "v1" || strings.HasPrefix(name, "v1/") {
		s.fail(w, r, errNotFound(r.URL.Path)) // the API's, not the board's
		return
	}
	if name == "" {
		name = "index.html"
	}
	if fi, err := fs.Stat(sub, name); err != nil || fi.IsDir() {
		// The board routes by the fragment (#/s/ID, #/usage): a path it
		// has no file for is no page of its, and a 404 says so rather
		// than a board that looks right at a wrong address.
		http.Error(w, "404 "+r.URL.Path+": no such page; the board is at /", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, sub, name)
}
