// Package oauth is GitHub as the GitHub App install flow asks it: the exchange of the setup
// URL's code for the installing person's user token (POST {oauth}/login/oauth/access_token),
// the installations that token may see (GET {api}/user/installations, paged), and whether the
// person administers an installation's account (GET {api}/user/memberships/orgs/{org},
// GET {api}/user).
//
// No error of this package carries a code or a token: GitHub's OAuth error answers are reduced
// to their error code, other failures to the status.
package githuboauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// maxAnswerBytes bounds what is read of one answer.
const maxAnswerBytes = 4 << 20

// maxPages bounds how many pages of /user/installations are read (100 each): a person with more
// than 5,000 installations is not a case to wait for.
const maxPages = 50

// Config configures the client.
type Config struct {
	APIURL       string // REST root (HEPHAESTUS_GITHUB_API_URL), default https://api.github.com
	OAuthURL     string // web and OAuth root (HEPHAESTUS_GITHUB_OAUTH_URL), default https://github.com
	ClientID     string // the App's OAuth client id
	ClientSecret string // the App's OAuth client secret
	HTTP         *http.Client
}

// Client calls GitHub.
type Client struct {
	cfg   Config
	oauth restkit.OAuth
}

// New builds the client. Errors: a missing client id or secret, a root that is not http(s).
func New(cfg Config) (*Client, error) {
	if cfg.APIURL == "" {
		cfg.APIURL = "https://api.github.com"
	}
	if cfg.OAuthURL == "" {
		cfg.OAuthURL = "https://github.com"
	}
	cfg.APIURL, cfg.OAuthURL = strings.TrimSuffix(cfg.APIURL, "/"), strings.TrimSuffix(cfg.OAuthURL, "/")
	o, err := restkit.NewOAuth("github", cfg.ClientID, cfg.ClientSecret, cfg.HTTP, maxAnswerBytes, cfg.APIURL, cfg.OAuthURL)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, oauth: o}, nil
}

// unavailable is a failure worth a retry; detail never holds a secret.
func unavailable(detail string) error {
	return restkit.OAuth{Provider: "github"}.Unavailable(detail)
}

// send makes req and reads its answer (bounded). Errors: ports.ErrUnavailable (transport).
func (c *Client) send(req *http.Request) (*http.Response, []byte, error) {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "hephaestus")
	return c.oauth.Send(req)
}

// decode reads a 2xx answer's JSON into into; 401 is ports.ErrUnauthenticated, any other
// status ports.ErrUnavailable.
func decode(req *http.Request, res *http.Response, body []byte, into any) error {
	switch {
	case res.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("github: %s answered 401: %w", req.URL.Path, ports.ErrUnauthenticated)
	case res.StatusCode < 200 || res.StatusCode > 299:
		return unavailable(fmt.Sprintf("%s answered %d", req.URL.Path, res.StatusCode))
	}
	if err := json.Unmarshal(body, into); err != nil {
		return unavailable(req.URL.Path + " answered no JSON of the documented shape")
	}
	return nil
}

func (c *Client) do(req *http.Request, into any) (http.Header, error) {
	res, body, err := c.send(req)
	if err != nil {
		return nil, err
	}
	if err := decode(req, res, body, into); err != nil {
		return nil, err
	}
	return res.Header, nil
}

// ExchangeCode trades the setup URL's code for the person's user access token. Errors:
// ports.ErrUnauthenticated when GitHub refuses the code (an OAuth error answer);
// ports.ErrUnavailable for any other failure (transport, 5xx, rate limit, an answer that is not
// the documented shape). Never an error that carries a token or code.
func (c *Client) ExchangeCode(ctx context.Context, code string) (string, error) {
	form := url.Values{"client_id": {c.cfg.ClientID}, "client_secret": {c.cfg.ClientSecret}, "code": {code}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.OAuthURL+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", unavailable("build request")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// GitHub answers OAuth errors with 200 and an "error" member.
	var answer struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		Error       string `json:"error"`
	}
	if _, err := c.do(req, &answer); err != nil {
		return "", err
	}
	if answer.Error != "" {
		return "", c.oauth.Refused("code exchange", answer.Error)
	}
	if answer.AccessToken == "" {
		return "", unavailable("code exchange answered no access_token")
	}
	return answer.AccessToken, nil
}

// Account is the account an installation is installed on, as GET /user/installations shows
// it: "Organization" or "User", its id and login.
type Account struct {
	ID    int64
	Login string
	Type  string
}

// UserInstallation finds installationID in GET /user/installations with the user token
// (following its pages) and answers the account it is installed on; false when the token does
// not list it. GitHub lists there every installation the person can reach, also through a
// collaborator grant or an organization membership: being listed proves access, not control
// (AdministersAccount). Errors as ExchangeCode's.
func (c *Client) UserInstallation(ctx context.Context, userToken string, installationID int64) (Account, bool, error) {
	next := c.cfg.APIURL + "/user/installations?per_page=100"
	for page := 0; next != "" && page < maxPages; page++ {
		req, err := c.userRequest(ctx, next, userToken)
		if err != nil {
			return Account{}, false, err
		}
		var answer struct {
			Installations *[]struct {
				ID      int64 `json:"id"`
				Account *struct {
					ID    int64  `json:"id"`
					Login string `json:"login"`
					Type  string `json:"type"`
				} `json:"account"`
			} `json:"installations"`
		}
		h, err := c.do(req, &answer)
		if err != nil {
			return Account{}, false, err
		}
		if answer.Installations == nil {
			return Account{}, false, unavailable("/user/installations answered no installations")
		}
		for _, inst := range *answer.Installations {
			if inst.ID != installationID {
				continue
			}
			if inst.Account == nil || inst.Account.ID <= 0 || inst.Account.Login == "" {
				return Account{}, false, unavailable("/user/installations answered an installation without its account")
			}
			return Account{ID: inst.Account.ID, Login: inst.Account.Login, Type: inst.Account.Type}, true, nil
		}
		next = nextLink(h.Get("Link"), c.cfg.APIURL)
	}
	return Account{}, false, nil
}

// The account types of GitHub installations.
const (
	AccountOrganization = "Organization"
	AccountUser         = "User"
)

var loginPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,98})$`)

// AdministersAccount reports whether the user token's person administers account, as GitHub
// documents it: for an organization, GET /user/memberships/orgs/{org} answers "role":"admin"
// and "state":"active" for that organization's id (404 or 403: not a member it may see, so
// no); for a user account, GET /user answers that account's id. Any other account type is no.
// Errors as ExchangeCode's.
func (c *Client) AdministersAccount(ctx context.Context, userToken string, account Account) (bool, error) {
	switch account.Type {
	case AccountOrganization:
		if !loginPattern.MatchString(account.Login) {
			return false, nil
		}
		req, err := c.userRequest(ctx, c.cfg.APIURL+"/user/memberships/orgs/"+url.PathEscape(account.Login), userToken)
		if err != nil {
			return false, err
		}
		var answer struct {
			State        string `json:"state"`
			Role         string `json:"role"`
			Organization *struct {
				ID int64 `json:"id"`
			} `json:"organization"`
		}
		found, err := c.doFound(req, &answer)
		if err != nil || !found {
			return false, err
		}
		if answer.Organization == nil {
			return false, unavailable("/user/memberships/orgs answered no organization")
		}
		return answer.Role == "admin" && answer.State == "active" && answer.Organization.ID == account.ID, nil
	case AccountUser:
		req, err := c.userRequest(ctx, c.cfg.APIURL+"/user", userToken)
		if err != nil {
			return false, err
		}
		var answer struct {
			ID int64 `json:"id"`
		}
		if _, err := c.do(req, &answer); err != nil {
			return false, err
		}
		if answer.ID <= 0 {
			return false, unavailable("/user answered no id")
		}
		return answer.ID == account.ID, nil
	default:
		return false, nil
	}
}

func (c *Client) userRequest(ctx context.Context, u, userToken string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, unavailable("build request")
	}
	req.Header.Set("Authorization", "Bearer "+userToken)
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	return req, nil
}

// doFound is do for a read whose 404, or 403 that is no rate limit (a limit answers 403 with
// X-RateLimit-Remaining 0 or Retry-After), means "no such thing for this token" (false).
func (c *Client) doFound(req *http.Request, into any) (bool, error) {
	res, body, err := c.send(req)
	if err != nil {
		return false, err
	}
	if res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusForbidden &&
		res.Header.Get("X-RateLimit-Remaining") != "0" && res.Header.Get("Retry-After") == "" {
		return false, nil
	}
	if err := decode(req, res, body, into); err != nil {
		return false, err
	}
	return true, nil
}

var nextPattern = regexp.MustCompile(`<([^>]+)>;\s*rel="next"`)

// nextLink is the Link header's rel="next" URL when it stays under the API root (a link
// elsewhere would carry the user token to another host).
func nextLink(header, root string) string {
	m := nextPattern.FindStringSubmatch(header)
	if m == nil || !strings.HasPrefix(m[1], root+"/") {
		return ""
	}
	return m[1]
}
