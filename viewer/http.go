package viewer

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// TokenCookie is the cookie that carries the token once a request has
// presented it as ?token=.
const TokenCookie = "replenish_token"

// Handler returns the viewer's HTTP handler: the page at /, the WebSocket
// at /ws, GET /api/stats (see Stats), GET /api/time ({"now_us": viewer
// clock in µs since the Unix epoch}), the WHIP endpoint at /whip and the
// WHEP endpoints at /whep/<stream name>. Every request passes the token
// and host checks described on Config.Token; WHIP requests must carry the
// token as "Authorization: Bearer", WHEP requests so or in the page's
// cookie. Run serves it; it is
// exported for embedding the viewer in another server, where WHIP and
// WHEP answer 503 unless Run is running too.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	files := http.FileServerFS(s.page)
	mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /ws", s.serveWS)
	mux.HandleFunc("GET /api/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, s.Stats())
	})
	mux.HandleFunc("GET /api/time", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, struct {
			NowUS int64 `json:"now_us"`
		}{s.now().UnixMicro()})
	})
	mux.HandleFunc("POST /whip", s.serveWHIP)
	mux.HandleFunc("GET /whip", methodNotAllowed("POST"))
	mux.HandleFunc("DELETE "+WHIPSessionPath+"{id}", s.deleteWHIP)
	mux.HandleFunc("GET "+WHIPSessionPath+"{id}", methodNotAllowed("DELETE"))
	mux.HandleFunc("POST /whep/{name...}", s.serveWHEP)
	mux.HandleFunc("GET /whep/{name...}", methodNotAllowed("POST"))
	mux.HandleFunc("DELETE "+WHEPSessionPath+"{id}", s.deleteWHEP)
	return s.guard(mux)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// guard checks every request: with a token, that it carries the token
// (see checkToken); without one, that it names a loopback host, so that a
// page elsewhere cannot reach the viewer by rebinding its own host name to
// 127.0.0.1. It also sets headers that keep the page self-contained, and
// over HTTPS on a host that is not loopback, HSTS.
func (s *Server) guard(next http.Handler) http.Handler {
	var want [sha256.Size]byte
	if s.cfg.Token != "" {
		want = sha256.Sum256([]byte(s.cfg.Token))
	}
	equal := func(got string) bool {
		h := sha256.Sum256([]byte(got))
		return subtle.ConstantTimeCompare(h[:], want[:]) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token == "" && !IsLoopback(r.Host) {
			http.Error(w, "viewer: without a token, use a loopback address (such as 127.0.0.1) in the URL", http.StatusForbidden)
			return
		}
		if s.cfg.Token != "" && !s.checkToken(w, r, equal) {
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.TLS != nil && !IsLoopback(r.Host) {
			// Not for loopback hosts: HSTS binds a host name on every
			// port, and other servers on localhost speak plain HTTP.
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// checkToken checks that r carries the token (equal, constant-time), as
// "Authorization: Bearer", the query parameter or the cookie; WHIP takes
// only the first and WHEP the first or the cookie (the page's native
// player), and both answer 401 with WWW-Authenticate otherwise. A page
// requested with the right ?token= gets the cookie (HttpOnly, SameSite
// Strict, Secure over HTTPS) and a redirect to its URL without the token,
// so that the token stays out of the address bar and the history. It
// reports whether the request may go on; if not, it has answered.
func (s *Server) checkToken(w http.ResponseWriter, r *http.Request, equal func(string) bool) bool {
	bearer, hasBearer := bearerToken(r)
	cookie := ""
	if c, err := r.Cookie(TokenCookie); err == nil {
		cookie = c.Value
	}
	query := r.URL.Query().Get("token")
	rtc := rtcPath(r.URL.Path)
	ok := false
	switch {
	case hasBearer:
		ok = equal(bearer)
	case rtc == "whep" && cookie != "":
		ok = equal(cookie)
	case rtc != "":
	case query != "":
		if ok = equal(query); ok {
			http.SetCookie(w, &http.Cookie{
				Name: TokenCookie, Value: query, Path: "/", HttpOnly: true,
				Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
			})
			if r.Method == http.MethodGet && isPage(r.URL.Path) {
				http.Redirect(w, r, withoutToken(r.URL), http.StatusSeeOther)
				return false
			}
		}
	case cookie != "":
		ok = equal(cookie)
	}
	switch {
	case ok:
		return true
	case rtc != "":
		w.Header().Set("WWW-Authenticate", `Bearer realm="replenish"`)
		http.Error(w, "viewer: missing or wrong token (send Authorization: Bearer <token>)", http.StatusUnauthorized)
	default:
		http.Error(w, "viewer: missing or wrong token (open the page with ?token=...)", http.StatusUnauthorized)
	}
	return false
}

// isPage reports whether path is the page or one of its files, which a
// browser loads (not the API or the WebSocket, which scripts may call with
// ?token=).
func isPage(path string) bool {
	return !strings.HasPrefix(path, "/api/") && path != "/ws"
}

// withoutToken returns u's path and query without the token parameter.
// The path is cleaned as ServeMux cleans it (checkToken runs before
// ServeMux does), keeping a trailing slash: a path such as "//evil.com/"
// would otherwise redirect to another host.
func withoutToken(u *url.URL) string {
	q := u.Query()
	q.Del("token")
	p := path.Clean("/" + u.Path)
	if strings.HasSuffix(u.Path, "/") && p != "/" {
		p += "/"
	}
	out := url.URL{Path: p, RawQuery: q.Encode()}
	return out.String()
}

// bearerToken returns the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// rtcPath says whether path belongs to the WHIP ("whip") or WHEP ("whep")
// endpoints, which take the token only as a bearer token (WHEP also as the
// page's cookie); "" for other paths.
func rtcPath(path string) string {
	switch {
	case path == "/whip" || strings.HasPrefix(path, "/whip/"):
		return "whip"
	case strings.HasPrefix(path, "/whep/"):
		return "whep"
	}
	return ""
}

// checkOrigin accepts a WebSocket from the page's own origin (its host,
// and https over HTTPS, http otherwise), from the configured extra
// origins, and from clients that send no Origin (not browsers; they still
// pass the token check).
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if strings.EqualFold(u.Host, r.Host) && u.Scheme == scheme {
		return true
	}
	for _, o := range s.cfg.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	s.log.Info("WebSocket origin refused", "origin", origin, "host", r.Host)
	return false
}
