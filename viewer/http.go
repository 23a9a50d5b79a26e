package viewer

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// TokenCookie is the cookie that carries the token once a request has
// presented it as ?token=.
const TokenCookie = "replenish_token"

// Handler returns the viewer's HTTP handler: the page at /, the WebSocket
// at /ws, GET /api/stats (see Stats), GET /api/time ({"now_us": viewer
// clock in µs since the Unix epoch}), the WHIP endpoint at /whip and the
// WHEP endpoints at /whep/<stream name>. Every request passes the token
// and host checks described on Config.Token; WHIP and WHEP requests must
// carry the token as "Authorization: Bearer". Run serves it; it is
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
// (as "Authorization: Bearer", the query parameter or the cookie; only
// the first for WHIP and WHEP, which answer 401 with WWW-Authenticate
// otherwise; constant-time comparison); without one, that it names
// a loopback host, so that a page elsewhere cannot reach the viewer by
// rebinding its own host name to 127.0.0.1. It also sets headers that keep
// the page self-contained.
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
		if s.cfg.Token == "" {
			if !IsLoopback(r.Host) {
				http.Error(w, "viewer: without a token, use a loopback address (such as 127.0.0.1) in the URL", http.StatusForbidden)
				return
			}
		} else {
			bearer, hasBearer := bearerToken(r)
			ok := false
			switch {
			case isRTCPath(r.URL.Path):
				if ok = hasBearer && equal(bearer); !ok {
					w.Header().Set("WWW-Authenticate", `Bearer realm="replenish"`)
					http.Error(w, "viewer: missing or wrong token (send Authorization: Bearer <token>)", http.StatusUnauthorized)
					return
				}
			case hasBearer:
				ok = equal(bearer)
			case r.URL.Query().Get("token") != "":
				q := r.URL.Query().Get("token")
				if ok = equal(q); ok {
					http.SetCookie(w, &http.Cookie{
						Name: TokenCookie, Value: q, Path: "/", HttpOnly: true,
						Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
					})
				}
			default:
				if c, err := r.Cookie(TokenCookie); err == nil {
					ok = equal(c.Value)
				}
			}
			if !ok {
				http.Error(w, "viewer: missing or wrong token (open the page with ?token=...)", http.StatusUnauthorized)
				return
			}
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// isRTCPath reports whether path belongs to the WHIP or WHEP endpoints,
// which take the token only as a bearer token.
func isRTCPath(path string) bool {
	return path == "/whip" || strings.HasPrefix(path, "/whip/") || strings.HasPrefix(path, "/whep/")
}

// checkOrigin accepts a WebSocket from the page's own host, from the
// configured extra origins, and from clients that send no Origin (not
// browsers; they still pass the token check).
func (s *Server) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
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
