package webapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/slack"
	"github.com/hephaestus-dev/hephaestus/domain/connection"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ contract.ResourceAccessChecker = (*ChannelAccess)(nil)

// Causes of a refused channel check.
const (
	CauseChannelNotFound = "channel-not-found" // channel_not_found: gone, or not visible to the bot
	CauseTokenRejected   = "token-rejected"    // not_authed, invalid_auth, token_revoked, account_inactive, …
	CauseTokenForbidden  = "token-forbidden"   // missing_scope and every other refusal
)

// ChannelAccess checks that a SLACK connection's own bot token (its stored secret) can read a
// subscribed channel: conversations.info (form POST channel) on the configured Web API root.
// The answer's name is the channel's display name. The token appears in no error.
type ChannelAccess struct {
	client *Client
}

// NewChannelAccess builds the checker on client (its base URL and HTTP client; its TokenFunc is
// not used: the check's token is the connection's own).
func NewChannelAccess(client *Client) (*ChannelAccess, error) {
	if client == nil {
		return nil, errors.New("slack access: a Web API client is required")
	}
	return &ChannelAccess{client: client}, nil
}

// Kind implements contract.ResourceAccessChecker: Slack connections.
func (a *ChannelAccess) Kind() connection.Kind { return slack.Kind }

// ResourceTypes implements contract.ResourceAccessChecker.
func (a *ChannelAccess) ResourceTypes() []string { return []string{slack.ResourceChannel} }

// CheckAccess implements contract.ResourceAccessChecker. ok with the same channel id admits; a
// refusal code refuses; 429, 5xx, Slack's transient codes and a transport failure give no
// verdict.
func (a *ChannelAccess) CheckAccess(ctx context.Context, target contract.AccessTarget, r ports.Resource) (contract.ResourceInfo, error) {
	var none contract.ResourceInfo
	if r.Type != slack.ResourceChannel || !channelID(r.ID) {
		return none, fmt.Errorf("slack access: %s %q is not a channel id: %w", r.Type, r.ID, ports.ErrMalformed)
	}
	if len(target.Credential) == 0 {
		return none, fmt.Errorf("%w: %w", contract.ErrUnverifiable, refused(CauseTokenRejected))
	}
	raw, err := a.client.do(ctx, string(target.Credential), "conversations.info", "application/x-www-form-urlencoded",
		[]byte(url.Values{"channel": {r.ID}}.Encode()), maxAnswerBytes)
	var pe *inbox.ProviderError
	var apiErr *APIError
	switch {
	case err == nil:
	case errors.As(err, &pe) && pe.Kind == inbox.ProviderRefused && errors.As(err, &apiErr):
		switch apiErr.Code {
		case "channel_not_found":
			return none, refused(CauseChannelNotFound)
		case "not_authed", "invalid_auth", "token_revoked", "token_expired", "account_inactive":
			return none, refused(CauseTokenRejected)
		}
		return none, refused(CauseTokenForbidden)
	default:
		return none, err
	}
	var answer struct {
		Channel *struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"channel"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || answer.Channel == nil {
		return none, inbox.Transient("slack access conversations.info", errors.New("answer without its channel"))
	}
	if answer.Channel.ID != r.ID {
		return none, refused("channel-id-mismatch")
	}
	return contract.ResourceInfo{Name: answer.Channel.Name}, nil
}

// channelID: Slack's channel ids are upper-case letters and digits starting with C, G or D.
func channelID(id string) bool {
	if len(id) < 2 || len(id) > 32 || !strings.ContainsRune("CGD", rune(id[0])) {
		return false
	}
	for _, c := range id {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func refused(cause string) error {
	return ports.Reject(ports.ErrForbidden, contract.ReasonResourceNotAccessible, cause)
}
