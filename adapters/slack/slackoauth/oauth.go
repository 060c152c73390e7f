// Package oauth is Slack as the Slack install flow asks it: the OAuth v2 exchange of the
// callback's code (POST {slackApi}oauth.v2.access) for the team, the app and the bot token.
//
// No error of this package carries a code or a token.
package slackoauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
)

const maxAnswerBytes = 1 << 20

// Config configures the client.
type Config struct {
	APIURL       string // Web API root ending in "/" (HEPHAESTUS_SLACK_API_URL), default https://slack.com/api/
	ClientID     string
	ClientSecret string
	HTTP         *http.Client
}

// Client calls Slack.
type Client struct {
	cfg   Config
	oauth restkit.OAuth
}

// New builds the client. Errors: a missing client id or secret, a root that is not http(s).
func New(cfg Config) (*Client, error) {
	if cfg.APIURL == "" {
		cfg.APIURL = "https://slack.com/api/"
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		cfg.APIURL += "/"
	}
	o, err := restkit.NewOAuth("slack", cfg.ClientID, cfg.ClientSecret, cfg.HTTP, maxAnswerBytes, cfg.APIURL)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, oauth: o}, nil
}

var (
	teamPattern = regexp.MustCompile(`^[TE][A-Z0-9]{2,30}$`)
	appPattern  = regexp.MustCompile(`^A[A-Z0-9]{2,30}$`)
)

// ExchangeCode trades the callback's code (issued for redirectURI, "" when none was sent) for
// the installation's team, app and bot token. Errors: ports.ErrUnauthenticated when Slack
// refuses the code (an OAuth error answer); ports.ErrUnavailable for any other failure
// (transport, 5xx, rate limit, an answer that is not the documented shape). Never an error
// that carries a token or code.
func (c *Client) ExchangeCode(ctx context.Context, code, redirectURI string) (Install, error) {
	form := url.Values{"code": {code}}
	if redirectURI != "" {
		form.Set("redirect_uri", redirectURI)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.APIURL+"oauth.v2.access", strings.NewReader(form.Encode()))
	if err != nil {
		return Install{}, c.oauth.Unavailable("build request")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// Slack's preferred way to send the client credentials (its docs): HTTP Basic.
	req.SetBasicAuth(c.cfg.ClientID, c.cfg.ClientSecret)
	res, body, err := c.oauth.Send(req)
	if err != nil {
		return Install{}, err
	}
	if res.StatusCode != http.StatusOK {
		return Install{}, c.oauth.Unavailable(fmt.Sprintf("oauth.v2.access answered %d", res.StatusCode))
	}
	var answer struct {
		OK          bool   `json:"ok"`
		Error       string `json:"error"`
		AppID       string `json:"app_id"`
		TokenType   string `json:"token_type"`
		AccessToken string `json:"access_token"`
		Team        *struct {
			ID string `json:"id"`
		} `json:"team"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return Install{}, c.oauth.Unavailable("oauth.v2.access answered no JSON")
	}
	if !answer.OK {
		return Install{}, c.oauth.Refused("oauth.v2.access", answer.Error)
	}
	if answer.Team == nil || !teamPattern.MatchString(answer.Team.ID) || answer.AccessToken == "" ||
		answer.TokenType != "bot" || (answer.AppID != "" && !appPattern.MatchString(answer.AppID)) {
		return Install{}, c.oauth.Unavailable("oauth.v2.access answered no team, bot token or app of the documented shape")
	}
	return Install{TeamID: answer.Team.ID, AppID: answer.AppID, BotToken: answer.AccessToken}, nil
}
