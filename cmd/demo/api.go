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

	"github.com/hephaestus-dev/hephaestus/client/hxapi"
)

// maxAnswerBytes bounds what the demo reads of one webhook answer.
const maxAnswerBytes = 4 << 20

// api talks to one running server: the management, operator and read APIs through the
// generated client (client/hxapi) with the admin token, and the webhook endpoints with provider
// signatures (hand-built: a signature covers the exact bytes sent).
type api struct {
	base string
	hc   *http.Client
	hx   *hxapi.ClientWithResponses
}

func newAPI(base, token string, hc *http.Client) (*api, error) {
	hx, err := hxapi.NewClientWithResponses(base, hxapi.WithHTTPClient(hc), hxapi.WithRequestEditorFn(hxapi.BearerToken(token)))
	if err != nil {
		return nil, err
	}
	return &api{base: base, hc: hc, hx: hx}, nil
}

// statusError is an answer with another status than the one the demo needs.
type statusError struct {
	operation string
	status    int
	body      string
}

func (e *statusError) Error() string {
	body := strings.TrimSpace(e.body)
	if len(body) > 300 {
		body = body[:300] + "…"
	}
	return fmt.Sprintf("%s answered %d %s", e.operation, e.status, body)
}

// answer is what every response of the generated client has.
type answer interface {
	StatusCode() int
	GetBody() []byte
}

// outcome checks a call of the generated client: its transport error, then its status.
func outcome(operation string, r answer, err error, status int) error {
	if err != nil {
		return fmt.Errorf("%s: %w", operation, err)
	}
	if r.StatusCode() != status {
		return &statusError{operation: operation, status: r.StatusCode(), body: string(r.GetBody())}
	}
	return nil
}

// ready checks that a server answers GET /readyz with 200.
func (a *api) ready(ctx context.Context) error {
	r, err := a.hx.CheckReadinessWithResponse(ctx)
	if err != nil {
		return err
	}
	if r.StatusCode() != http.StatusOK {
		return fmt.Errorf("checkReadiness answered %d", r.StatusCode())
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
