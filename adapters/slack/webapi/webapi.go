// Package webapi is the Slack Web API as the Slack handlers and the backfill use it:
// chat.postEphemeral for the channel join notice, views.publish for App Home, and
// conversations.history and conversations.replies for a channel's backfill
// (adapters/slack/slacksync), over net/http
// with the bot token of the workspace's connection of the team (StoredTokens).
//
// Both calls are external effects. The handlers make them outside every database transaction,
// and nothing records that a call happened before the delivery completes: a process that stops
// after a call and before its delivery is completed makes the call again on the retry. Slack
// offers no idempotency key for either method; views.publish replaces the whole view (a repeat
// is invisible) and a repeated ephemeral notice is a harmless duplicate.
package webapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

var _ slackmodel.Notifier = (*Client)(nil)

// DefaultBaseURL is Slack's Web API.
const DefaultBaseURL = "https://slack.com/api/"

// maxAnswerBytes bounds what is read of an answer; Slack's answers to these methods are small.
const maxAnswerBytes = 1 << 20

// TokenFunc returns the bot token of a workspace's installation of a team. Errors are returned
// unchanged (wrap transport failures of a secret store in inbox.Transient); ErrNoToken means
// the team has no token, and the call is not made.
type TokenFunc func(ctx context.Context, workspaceID int64, teamID string) (string, error)

// ErrNoToken is a TokenFunc's answer for a team without a bot token: the client makes no call
// and reports success, as the handlers do when no Web API is configured at all.
var ErrNoToken = errors.New("slack web api: no bot token for the team")

// StoredTokenFunc reads the bot token a workspace's live connection of a team stores (sealed;
// found is false when it stores none).
type StoredTokenFunc func(ctx context.Context, workspaceID int64, teamID string) (token string, found bool, err error)

// StoredTokens is the TokenFunc of a running server: the bot token the team's connection stores
// (the Slack install flow stores the token oauth.v2.access answered), else fallback (the static
// HEPHAESTUS_SLACK_BOT_TOKEN, for connections the instance administrator created without a
// token; "" for none), else ErrNoToken.
func StoredTokens(stored StoredTokenFunc, fallback string) TokenFunc {
	return func(ctx context.Context, workspaceID int64, teamID string) (string, error) {
		token, found, err := stored(ctx, workspaceID, teamID)
		if err != nil {
			return "", err
		}
		if found && token != "" {
			return token, nil
		}
		if fallback != "" {
			return fallback, nil
		}
		return "", ErrNoToken
	}
}

// Config configures the client.
type Config struct {
	// BaseURL of the Web API, ending in "/" (default DefaultBaseURL; a spec points it at an
	// httptest server).
	BaseURL string
	// Token returns the team's bot token. Required.
	Token TokenFunc
	// HTTP is the client used (default: a client with Timeout).
	HTTP *http.Client
	// Timeout bounds one call when HTTP is not given (default 10 s).
	Timeout time.Duration
}

func (c *Config) setDefaults() {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(c.BaseURL, "/") {
		c.BaseURL += "/"
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.HTTP == nil {
		c.HTTP = restkit.HTTPClient(c.Timeout)
	}
}

func (c Config) validate() error {
	if c.Token == nil {
		return errors.New("slack web api: a token function is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("slack web api: base URL %q is not an http(s) URL", c.BaseURL)
	}
	return nil
}

// Client calls the Slack Web API.
type Client struct {
	cfg Config
}

// New validates cfg and makes the client.
func New(cfg Config) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg}, nil
}

// APIError is Slack's refusal of a call ({"ok": false, "error": "channel_not_found"}), the cause
// of an *inbox.ProviderError: ProviderRefused for a code that fails the same way again (it uses
// the unknown-failure budget), ProviderRateLimited or ProviderServerError for Slack's transient
// codes.
type APIError struct {
	Method string
	Code   string
}

func (e *APIError) Error() string { return "slack " + e.Method + ": " + e.Code }

// PostEphemeral calls chat.postEphemeral. Errors: *inbox.ProviderError, never a permanent
// failure: ProviderTransport for no answer, ProviderServerError for a 5xx or Slack's transient
// codes, ProviderRateLimited for a 429 (waiting for Retry-After) or "ratelimited",
// ProviderRefused around an *APIError for other refusals, ProviderUnreadable for an answer that
// is not JSON.
func (c *Client) PostEphemeral(ctx context.Context, workspaceID int64, teamID, channelID, userID, text string) error {
	return c.call(ctx, workspaceID, teamID, "chat.postEphemeral", map[string]any{
		"channel": channelID, "user": userID, "text": text,
	})
}

// PublishHome calls views.publish. Errors as for PostEphemeral.
func (c *Client) PublishHome(ctx context.Context, workspaceID int64, teamID, userID string, view json.RawMessage) error {
	return c.call(ctx, workspaceID, teamID, "views.publish", map[string]any{"user_id": userID, "view": view})
}

// transientCodes are Slack error codes that a later call can get past, with their kind.
var transientCodes = map[string]inbox.ProviderFailure{
	"ratelimited": inbox.ProviderRateLimited, "rate_limited": inbox.ProviderRateLimited,
	"internal_error": inbox.ProviderServerError, "fatal_error": inbox.ProviderServerError,
	"service_unavailable": inbox.ProviderServerError, "request_timeout": inbox.ProviderServerError,
}

func (c *Client) call(ctx context.Context, workspaceID int64, teamID, method string, body map[string]any) error {
	token, err := c.cfg.Token(ctx, workspaceID, teamID)
	if errors.Is(err, ErrNoToken) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("slack %s: bot token: %w", method, err)
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("slack %s: encode: %w", method, err)
	}
	_, err = c.do(ctx, token, method, "application/json; charset=utf-8", payload, maxAnswerBytes)
	return err
}

// maxHistoryBytes bounds a conversations.history or conversations.replies answer (up to limit
// messages with their attachments and blocks).
const maxHistoryBytes = 8 << 20

// ConversationsHistory reads one page of a channel's history (conversations.history, form
// encoded: channel, limit, and cursor when not ""), with the bot token of the workspace's
// connection of the team, and returns Slack's answer as it came. Errors as for PostEphemeral;
// besides, a team without a bot token is refused (nothing can be read).
func (c *Client) ConversationsHistory(ctx context.Context, workspaceID int64, teamID, channelID, cursor string, limit int) (json.RawMessage, error) {
	form := url.Values{"channel": {channelID}, "limit": {strconv.Itoa(limit)}}
	return c.read(ctx, workspaceID, teamID, "conversations.history", form, cursor)
}

// ConversationsReplies reads one page of a thread's replies (conversations.replies, form
// encoded: channel, ts the thread parent's, limit, and cursor when not ""), with the same token
// as ConversationsHistory, and returns Slack's answer as it came (the parent first on every
// page, then the replies). Errors as for ConversationsHistory; a parent Slack no longer has is
// ProviderRefused around an *APIError with Code ThreadNotFound.
func (c *Client) ConversationsReplies(ctx context.Context, workspaceID int64, teamID, channelID, parentTS, cursor string, limit int) (json.RawMessage, error) {
	form := url.Values{"channel": {channelID}, "ts": {parentTS}, "limit": {strconv.Itoa(limit)}}
	return c.read(ctx, workspaceID, teamID, "conversations.replies", form, cursor)
}

// ThreadNotFound is Slack's code for a thread parent it does not have (deleted meanwhile).
const ThreadNotFound = "thread_not_found"

// read posts one page request of a paged read method (form plus cursor when not "").
func (c *Client) read(ctx context.Context, workspaceID int64, teamID, method string, form url.Values, cursor string) (json.RawMessage, error) {
	token, err := c.cfg.Token(ctx, workspaceID, teamID)
	if errors.Is(err, ErrNoToken) {
		return nil, &inbox.ProviderError{Provider: "slack", Op: "POST " + method, Kind: inbox.ProviderRefused, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("slack %s: bot token: %w", method, err)
	}
	if cursor != "" {
		form.Set("cursor", cursor)
	}
	return c.do(ctx, token, method, "application/x-www-form-urlencoded", []byte(form.Encode()), maxHistoryBytes)
}

// do posts payload to method and returns the answer of an ok call. Errors: *inbox.ProviderError
// classified as PostEphemeral documents.
func (c *Client) do(ctx context.Context, token, method, contentType string, payload []byte, maxBytes int64) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+method, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("slack %s: %w", method, err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	fail := func(kind inbox.ProviderFailure, status int, cause error) *inbox.ProviderError {
		return &inbox.ProviderError{Provider: "slack", Op: "POST " + method, Kind: kind, Status: status, Err: cause}
	}
	res, err := c.cfg.HTTP.Do(req)
	if err != nil {
		// The URL error can name the base URL, never the token (it travels in a header).
		return nil, fail(inbox.ProviderTransport, 0, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxBytes))
	if err != nil {
		return nil, fail(inbox.ProviderTransport, res.StatusCode, err)
	}
	switch {
	case res.StatusCode == http.StatusTooManyRequests:
		e := fail(inbox.ProviderRateLimited, res.StatusCode, nil)
		e.RetryAfter = inbox.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
		return nil, e
	case res.StatusCode >= 500:
		e := fail(inbox.ProviderServerError, res.StatusCode, nil)
		e.RetryAfter = inbox.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
		return nil, e
	}
	var answer struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, fail(inbox.ProviderUnreadable, res.StatusCode, err)
	}
	if answer.OK {
		return raw, nil
	}
	apiErr := &APIError{Method: method, Code: answer.Error}
	if kind, ok := transientCodes[answer.Error]; ok {
		e := fail(kind, res.StatusCode, apiErr)
		e.RetryAfter = inbox.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
		return nil, e
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 || res.StatusCode >= 400 {
		return nil, fail(inbox.ProviderRefused, res.StatusCode, apiErr)
	}
	return nil, fail(inbox.ProviderUnreadable, res.StatusCode, apiErr)
}
