package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"replenish/experiments/scenario"
	"replenish/rate"
	"replenish/viewer"
)

// pathJSON is the body of GET /api/path and of a POST's answer.
type pathJSON struct {
	RateBps    int64   `json:"rate_bps"`
	RTTMs      float64 `json:"rtt_ms"`
	QueueBytes int     `json:"queue_bytes"`
	// Shared says every sender is on one path, through one bottleneck;
	// otherwise each has a path of its own, of this shape.
	Shared bool `json:"shared"`
	Start  struct {
		RateBps int64   `json:"rate_bps"`
		RTTMs   float64 `json:"rtt_ms"`
	} `json:"start"`
}

// pathChange is the body of POST /api/path: a new rate and RTT (0 or
// absent keeps each), or a reset to the starting values.
type pathChange struct {
	RateBps int64   `json:"rate_bps"`
	RTTMs   float64 `json:"rtt_ms"`
	Reset   bool    `json:"reset"`
}

func (d *demo) pathJSON() pathJSON {
	c := d.get()
	var j pathJSON
	j.RateBps, j.RTTMs = int64(c.Rate), float64(c.RTT)/float64(time.Millisecond)
	j.QueueBytes = scenario.QueueBytes(d.start.Rate, d.start.Queue)
	j.Shared = d.shared || len(d.p) == 1
	j.Start.RateBps, j.Start.RTTMs = int64(d.start.Rate), float64(d.start.RTT)/float64(time.Millisecond)
	return j
}

// serveAPI serves /api/path: GET returns the path, POST (a JSON
// pathChange, from the page's own origin) changes it. Like the viewer it
// answers only requests that name a loopback host.
func (d *demo) serveAPI(w http.ResponseWriter, r *http.Request) {
	if !viewer.IsLoopback(r.Host) {
		http.Error(w, "demo: use a loopback address (such as 127.0.0.1) in the URL", http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		if err := checkChange(r); err != nil {
			http.Error(w, "demo: "+err.Error(), http.StatusForbidden)
			return
		}
		var c pathChange
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&c); err != nil {
			http.Error(w, "demo: want a JSON body {rate_bps, rtt_ms} or {reset: true}", http.StatusBadRequest)
			return
		}
		rt, rtt := rate.Bitrate(c.RateBps), time.Duration(c.RTTMs*float64(time.Millisecond))
		if (rt != 0 && (rt < minRate || rt > maxRate)) || rtt < 0 || rtt > maxRTT || math.IsNaN(c.RTTMs) {
			http.Error(w, fmt.Sprintf("demo: rate from %v to %v, RTT up to %v", minRate, maxRate, maxRTT), http.StatusBadRequest)
			return
		}
		d.set(rt, rtt, c.Reset)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "demo: GET or POST", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(d.pathJSON())
}

// checkChange accepts a change only as JSON (which a page elsewhere cannot
// send without the browser asking first) and, when the browser names its
// origin, only from the page's own.
func checkChange(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errors.New("changes must be application/json")
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return errors.New("changes only from the demo's own page")
		}
	}
	return nil
}

// handler returns the demo's HTTP handler: /api/path, the path panel's
// files, and everything else from the viewer through page, a proxy to it
// which the demo sets to add the panel to the viewer's page.
func (d *demo) handler(page *httputil.ReverseProxy) http.Handler {
	withPanel(page)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/path", d.serveAPI)
	mux.Handle(panelPrefix, panelHandler())
	mux.Handle("/", page)
	return mux
}
