package explorer

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/httpapi"
)

//go:embed assets
var assets embed.FS

// contentTypes are the types of the asset files, by extension; an asset of another extension
// is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// securityHeaders keep the page to its own scripts and styles, and out of other sites' frames:
// it shows data from the server, some of it written by anyone who posts an operation.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
}

type asset struct {
	data        []byte
	contentType string
	etag        string
}

// page serves the explorer's static files.
type page struct {
	assets map[string]asset // by name under assets/
	// started is the Last-Modified of every asset: they change only with the binary.
	started time.Time
}

// Routes returns the route registration of the explorer page for httpapi.Config.Routes:
// /explorer/assets/{name} serves the scripts and styles, and every other GET under /explorer/
// serves index.html, whose script renders the view the path names (/explorer/did/{did},
// /explorer/anchor/{seq}, /explorer/pipeline, …), so any view can be linked to and opened
// directly. The JSON API under /explorer/api/ is httpapi's (ExplorerRoutes); its patterns are
// more specific and win.
func Routes() (func(mux httpapi.Router), error) {
	p := &page{assets: map[string]asset{}, started: time.Now().UTC().Truncate(time.Second)}
	err := fs.WalkDir(assets, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			return nil
		}
		data, err := assets.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		p.assets[strings.TrimPrefix(name, "assets/")] = asset{data: data, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("explorer assets: %w", err)
	}
	if _, ok := p.assets["index.html"]; !ok {
		return nil, fmt.Errorf("explorer assets: index.html is missing")
	}
	return func(mux httpapi.Router) {
		mux.HandleFunc("GET /explorer", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/explorer/", http.StatusMovedPermanently)
		})
		mux.HandleFunc("GET /explorer/assets/{name}", p.serveAsset)
		mux.HandleFunc("GET /explorer/", p.serveIndex)
	}, nil
}

func (p *page) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	a, ok := p.assets[name]
	if !ok || name == "index.html" {
		http.NotFound(w, r)
		return
	}
	p.serve(w, r, a)
}

func (p *page) serveIndex(w http.ResponseWriter, r *http.Request) {
	p.serve(w, r, p.assets["index.html"])
}

func (p *page) serve(w http.ResponseWriter, r *http.Request, a asset) {
	h := w.Header()
	for k, v := range securityHeaders {
		h.Set(k, v)
	}
	h.Set("Content-Type", a.contentType)
	// Revalidated on every load (a cheap 304): an upgraded binary's page is seen at once.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, "", p.started, bytes.NewReader(a.data))
}
