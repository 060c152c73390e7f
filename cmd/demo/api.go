package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxAnswerBytes bounds what the demo reads of one answer.
const maxAnswerBytes = 4 << 20

// api talks to one running server: the management, operator and read APIs with the admin
// token, and the webhook endpoints with provider signatures.
type api struct {
	base  string
	token string
	hc    *http.Client
}

// statusError is an answer with another status than the one the demo needs.
type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	body := strings.TrimSpace(e.body)
	if len(body) > 300 {
		body = body[:300] + "…"
	}
	return fmt.Sprintf("%s %s answered %d %s", e.method, e.path, e.status, body)
}

// call sends a JSON request with the admin token; it wants status want and decodes the answer
// into out (nil: ignored).
func (a *api) call(ctx context.Context, method, path string, in any, want int, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return &statusError{method: method, path: path, status: resp.StatusCode, body: string(raw)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}

func (a *api) get(ctx context.Context, path string, out any) error {
	return a.call(ctx, http.MethodGet, path, nil, http.StatusOK, out)
}

// ready checks that a server answers GET /readyz with 200.
func (a *api) ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz answered %d", resp.StatusCode)
	}
	return nil
}

// webhookAnswer is what a webhook endpoint answers (CONTRACT.md, Webhook endpoints).
type webhookAnswer struct {
	Status     string `json:"status"`
	Stored     int    `json:"stored"`
	Duplicates int    `json:"duplicates"`
	Reason     string `json:"reason"`
	Error      string `json:"error"`
}

// sent is what the server answered to one delivery.
type sent struct {
	HTTPStatus int
	Answer     webhookAnswer
	Err        error // a transport failure or an answer that is not JSON
}

// post sends one delivery with headers; the caller signs them for this exact body just before
// (the Slack and Outline signatures carry a timestamp with a 5-minute window).
func (a *api) post(ctx context.Context, path string, body []byte, headers http.Header) sent {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+path, bytes.NewReader(body))
	if err != nil {
		return sent{Err: err}
	}
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return sent{Err: fmt.Errorf("POST %s: %w", path, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return sent{HTTPStatus: resp.StatusCode, Err: fmt.Errorf("POST %s: read answer: %w", path, err)}
	}
	out := sent{HTTPStatus: resp.StatusCode}
	if err := json.Unmarshal(raw, &out.Answer); err != nil {
		out.Err = fmt.Errorf("POST %s: answer %d is not JSON: %q", path, resp.StatusCode, raw)
	}
	return out
}

// Provider signatures (CONTRACT.md, Webhook endpoints; the adapters' Verify code).

// signGitHub is X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>.
func signGitHub(secret string, body []byte) string {
	return "sha256=" + hexMAC(secret, body)
}

// signSlack is X-Slack-Signature for the X-Slack-Request-Timestamp ts: v0=<hex HMAC-SHA256 of
// "v0:{ts}:{body}">.
func signSlack(secret string, ts int64, body []byte) string {
	return "v0=" + hexMAC(secret, []byte("v0:"+strconv.FormatInt(ts, 10)+":"), body)
}

// signOutline is Outline-Signature at time t: t={ms},s=<hex HMAC-SHA256 of "{ms}.{body}">.
func signOutline(secret string, t time.Time, body []byte) string {
	ms := strconv.FormatInt(t.UnixMilli(), 10)
	return "t=" + ms + ",s=" + hexMAC(secret, []byte(ms+"."), body)
}

func hexMAC(secret string, parts ...[]byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		mac.Write(p)
	}
	return hex.EncodeToString(mac.Sum(nil))
}

// isStatus reports whether err is an answer with status code.
func isStatus(err error, code int) bool {
	var se *statusError
	return errors.As(err, &se) && se.status == code
}
