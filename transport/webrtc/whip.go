package webrtc

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode"
)

// Limits on what the WHIP client reads.
const (
	// MaxAnswerSize is the largest SDP answer the client accepts, in
	// bytes.
	MaxAnswerSize = 64 << 10
	// maxErrorBody is how much of an error answer's body is read and
	// quoted in the error.
	maxErrorBody = 256
)

const sdpType = "application/sdp"

// StatusError is the WHIP endpoint's answer when its status is not the
// one expected: 201 Created for the offer, 2xx for the DELETE. It wraps
// ErrWHIP.
type StatusError struct {
	Method string // "POST" or "DELETE"
	Code   int    // HTTP status code
	Status string // HTTP status line, as in "403 Forbidden"
	Body   string // the start of the body, printable characters only
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("webrtc: WHIP %s answered %s", e.Method, e.Status)
	}
	return fmt.Sprintf("webrtc: WHIP %s answered %s: %q", e.Method, e.Status, e.Body)
}

func (e *StatusError) Unwrap() error { return ErrWHIP }

// postOffer POSTs the SDP offer to the WHIP endpoint and returns the SDP
// answer and the session's URL (the Location header, resolved against the
// URL that answered). It blocks until the answer is read or ctx is done.
// Once the endpoint has named a session, the session comes back even with
// an error, for the caller to delete.
func postOffer(ctx context.Context, client *http.Client, endpoint *url.URL, token, offer string) (string, *url.URL, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), strings.NewReader(offer))
	if err != nil {
		return "", nil, fmt.Errorf("webrtc: WHIP request: %w", err)
	}
	req.Header.Set("Content-Type", sdpType)
	req.Header.Set("Accept", sdpType)
	setToken(req, token)
	resp, err := client.Do(req)
	if err != nil {
		return "", nil, fmt.Errorf("webrtc: WHIP POST to %s: %w", redacted(endpoint), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return "", nil, statusError(resp)
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", nil, fmt.Errorf("%w: 201 Created without a Location header", ErrWHIP)
	}
	session, err := resp.Request.URL.Parse(loc)
	if err != nil {
		return "", nil, fmt.Errorf("%w: Location %q: %w", ErrWHIP, loc, err)
	}
	// From here on a session exists: return it, so that it is deleted.
	if ct := resp.Header.Get("Content-Type"); !isSDP(ct) {
		return "", session, fmt.Errorf("%w: the answer's content type is %q, want %s", ErrWHIP, ct, sdpType)
	}
	body, complete, err := readBounded(resp.Body, MaxAnswerSize)
	switch {
	case err != nil:
		return "", session, fmt.Errorf("%w: reading the answer: %w", ErrWHIP, err)
	case !complete:
		return "", session, fmt.Errorf("%w: the answer is larger than %d bytes", ErrWHIP, MaxAnswerSize)
	case len(body) == 0:
		return "", session, fmt.Errorf("%w: empty answer", ErrWHIP)
	}
	return string(body), session, nil
}

// deleteSession ends the WHIP session. It blocks until the endpoint
// answers or ctx is done.
func deleteSession(ctx context.Context, client *http.Client, session *url.URL, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, session.String(), nil)
	if err != nil {
		return fmt.Errorf("webrtc: WHIP request: %w", err)
	}
	setToken(req, token)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("webrtc: WHIP DELETE of %s: %w", redacted(session), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(resp)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody)) // let the connection be reused
	return nil
}

func setToken(req *http.Request, token string) {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

func isSDP(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == sdpType
}

// statusError reads the start of an unexpected answer's body into a
// StatusError.
func statusError(resp *http.Response) error {
	body, _, _ := readBounded(resp.Body, maxErrorBody)
	return &StatusError{
		Method: resp.Request.Method,
		Code:   resp.StatusCode,
		Status: resp.Status,
		Body:   printable(string(body)),
	}
}

// readBounded reads r to its end or to n bytes, whichever comes first;
// complete says it reached the end.
func readBounded(r io.Reader, n int) (b []byte, complete bool, err error) {
	b, err = io.ReadAll(io.LimitReader(r, int64(n)+1))
	if len(b) > n {
		return b[:n], false, err
	}
	return b, err == nil, err
}

// printable keeps the graphic characters of s and turns every run of
// others (line breaks, controls, invalid UTF-8) into one space.
func printable(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == unicode.ReplacementChar || !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// redacted returns u without its query and credentials, for errors.
func redacted(u *url.URL) string {
	v := *u
	v.User, v.RawQuery = nil, ""
	return v.String()
}
