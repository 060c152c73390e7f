package githubapi

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubredelivery"
	"github.com/hephaestus-dev/hephaestus/adapters/restkit"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// GitHub App authentication (CONTRACT.md "Provider access"): the App signs a short JWT with its
// private key, and exchanges it for an installation token per installation.
const (
	// jwtBackdate is how far in the past iat is put, against clock drift (GitHub's advice).
	jwtBackdate = 60 * time.Second
	// jwtLifetime is how far ahead exp is put; GitHub refuses more than 10 minutes.
	jwtLifetime = 9 * time.Minute
	// tokenRefreshMargin: a cached installation token is used until this long before its
	// expires_at, so no call starts with a token that expires during it.
	tokenRefreshMargin = 5 * time.Minute
	maxAppAnswerBytes  = 1 << 20
)

// ParseAppPrivateKey reads the App's PEM private key (PKCS #1 or PKCS #8 RSA). The error never
// contains key material.
func ParseAppPrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	key, err := jwt.ParseRSAPrivateKeyFromPEM(pemBytes)
	if err != nil {
		return nil, errors.New("github app: the private key is not a PEM-encoded RSA private key")
	}
	return key, nil
}

// AppConfig configures App.
type AppConfig struct {
	// BaseURL is the REST API root (as Config.BaseURL).
	BaseURL string
	// AppID is the JWT's issuer.
	AppID string
	// Key signs the JWTs.
	Key *rsa.PrivateKey
	// HTTPClient sends the requests (default: a client with a 30 s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// UserAgent as for Config.
	UserAgent string
}

// App authenticates as a GitHub App. It is safe for concurrent use: installation tokens are
// cached per installation and minted at most once at a time per installation (concurrent
// callers wait for the one mint in flight). Neither a JWT nor a token is ever logged or put in
// an error.
type App struct {
	cfg  AppConfig
	base string

	mu      sync.Mutex
	tokens  map[int64]installationToken
	flights map[int64]*mint
}

type installationToken struct {
	token     string
	expiresAt time.Time
}

// mint is one installation token request in flight; done closes when token/err are set.
type mint struct {
	done  chan struct{}
	token string
	err   error
}

// NewApp validates cfg.
func NewApp(cfg AppConfig) (*App, error) {
	if cfg.Key == nil {
		return nil, errors.New("github app: a private key is required")
	}
	if id, err := strconv.ParseInt(cfg.AppID, 10, 64); err != nil || id <= 0 {
		return nil, errors.New("github app: the App id must be a positive number")
	}
	c := Config{BaseURL: cfg.BaseURL, HTTPClient: cfg.HTTPClient, UserAgent: cfg.UserAgent}
	base, err := c.setup()
	if err != nil {
		return nil, err
	}
	cfg.HTTPClient, cfg.UserAgent = c.HTTPClient, c.UserAgent
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &App{cfg: cfg, base: strings.TrimRight(base.String(), "/"),
		tokens: map[int64]installationToken{}, flights: map[int64]*mint{}}, nil
}

// JWT signs a new App JWT: RS256, iss the App id, iat 60 s in the past, exp 9 minutes ahead.
func (a *App) JWT() (string, error) {
	now := a.cfg.Now()
	claims := jwt.RegisteredClaims{
		Issuer:    a.cfg.AppID,
		IssuedAt:  jwt.NewNumericDate(now.Add(-jwtBackdate)),
		ExpiresAt: jwt.NewNumericDate(now.Add(jwtLifetime)),
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(a.cfg.Key)
	if err != nil {
		return "", errors.New("github app: signing the JWT failed")
	}
	return signed, nil
}

// InstallationToken is a token of installation id: the cached one while it is valid for more
// than five minutes, else a new one from POST /app/installations/{id}/access_tokens. Callers
// that ask while a mint for the same installation is in flight wait for it and share its
// answer. Errors: *inbox.ProviderError as for the Client (a 404 also wraps
// handlers.ErrProviderNotFound: the installation is gone); the context's error.
func (a *App) InstallationToken(ctx context.Context, id int64) (string, error) {
	if id <= 0 {
		return "", fmt.Errorf("github app: installation id %d", id)
	}
	a.mu.Lock()
	if t, ok := a.tokens[id]; ok && a.cfg.Now().Before(t.expiresAt.Add(-tokenRefreshMargin)) {
		a.mu.Unlock()
		return t.token, nil
	}
	if f, ok := a.flights[id]; ok {
		a.mu.Unlock()
		select {
		case <-f.done:
			return f.token, f.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f := &mint{done: make(chan struct{})}
	a.flights[id] = f
	a.mu.Unlock()

	token, expiresAt, err := a.mintToken(ctx, id)

	a.mu.Lock()
	delete(a.flights, id)
	if err == nil {
		a.tokens[id] = installationToken{token: token, expiresAt: expiresAt}
	}
	f.token, f.err = token, err
	close(f.done)
	a.mu.Unlock()
	return token, err
}

// Forget drops installation id's cached token (GitHub refused it: revoked or the installation
// changed), so the next call mints a new one.
func (a *App) Forget(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.tokens, id)
}

func (a *App) mintToken(ctx context.Context, id int64) (string, time.Time, error) {
	path := "/app/installations/" + strconv.FormatInt(id, 10) + "/access_tokens"
	var answer struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := a.call(ctx, http.MethodPost, path, &answer); err != nil {
		return "", time.Time{}, err
	}
	if answer.Token == "" || answer.ExpiresAt.IsZero() {
		return "", time.Time{}, failureOf(http.MethodPost, path, inbox.ProviderUnreadable, http.StatusCreated,
			errors.New("installation token answer without token or expires_at"))
	}
	return answer.Token, answer.ExpiresAt, nil
}

var _ githubmodel.InstallationVerifier = (*App)(nil)

// InstallationStatus implements githubmodel.InstallationVerifier: GET /app/installations/{id}
// with the App JWT. Errors: *inbox.ProviderError (a 404 is no error: Exists false).
func (a *App) InstallationStatus(ctx context.Context, id int64) (githubmodel.InstallationStatus, error) {
	path := "/app/installations/" + strconv.FormatInt(id, 10)
	var answer struct {
		ID          int64      `json:"id"`
		SuspendedAt *time.Time `json:"suspended_at"`
	}
	err := a.call(ctx, http.MethodGet, path, &answer)
	if errors.Is(err, githubmodel.ErrProviderNotFound) {
		return githubmodel.InstallationStatus{}, nil
	}
	if err != nil {
		return githubmodel.InstallationStatus{}, err
	}
	if answer.ID != id {
		return githubmodel.InstallationStatus{}, failureOf(http.MethodGet, path, inbox.ProviderUnreadable, http.StatusOK,
			errors.New("installation answer for another id"))
	}
	return githubmodel.InstallationStatus{Exists: true, Suspended: answer.SuspendedAt != nil}, nil
}

// AppGet reads path (with query) as the App, decoding a 2xx answer into v, and returns the
// answer's Link header. Errors as for Installation.
func (a *App) AppGet(ctx context.Context, path string, query url.Values, v any) (link string, err error) {
	return a.callWithLink(ctx, http.MethodGet, path, query, v)
}

// AppPost posts to path as the App (no body), decoding a 2xx answer into v when v is not nil.
func (a *App) AppPost(ctx context.Context, path string, v any) error {
	_, err := a.callWithLink(ctx, http.MethodPost, path, nil, v)
	return err
}

func (a *App) call(ctx context.Context, method, path string, v any) error {
	_, err := a.callWithLink(ctx, method, path, nil, v)
	return err
}

func (a *App) callWithLink(ctx context.Context, method, path string, query url.Values, v any) (string, error) {
	signed, err := a.JWT()
	if err != nil {
		return "", err
	}
	target := a.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return "", fmt.Errorf("github app %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", a.cfg.UserAgent)
	req.Header.Set("Authorization", "Bearer "+signed)
	resp, err := call(method, path, maxAppAnswerBytes).Do(a.cfg.HTTPClient, req, v)
	if err != nil {
		return "", err
	}
	return resp.Header.Get("Link"), nil
}

var _ githubredelivery.HookDeliveries = (*App)(nil)

// hookDeliveriesPerPage is GitHub's largest page of the App's delivery log.
const hookDeliveriesPerPage = 100

// ListHookDeliveries implements githubredelivery.HookDeliveries: GET /app/hook/deliveries?per_page=100
// (&cursor=…) with the App JWT. The next page's cursor is taken from the Link header's
// rel="next" URL; that URL itself is never followed.
func (a *App) ListHookDeliveries(ctx context.Context, cursor string) ([]githubredelivery.HookDelivery, string, error) {
	const path = "/app/hook/deliveries"
	q := url.Values{"per_page": {strconv.Itoa(hookDeliveriesPerPage)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var answer []struct {
		ID         int64  `json:"id"`
		GUID       string `json:"guid"`
		StatusCode *int   `json:"status_code"`
	}
	link, err := a.AppGet(ctx, path, q, &answer)
	if err != nil {
		return nil, "", err
	}
	if answer == nil {
		return nil, "", failureOf(http.MethodGet, path, inbox.ProviderUnreadable, http.StatusOK, errors.New("no delivery list"))
	}
	out := make([]githubredelivery.HookDelivery, 0, len(answer))
	for _, d := range answer {
		if d.ID <= 0 || d.GUID == "" || d.StatusCode == nil {
			return nil, "", failureOf(http.MethodGet, path, inbox.ProviderUnreadable, http.StatusOK,
				errors.New("delivery without id, guid or status_code"))
		}
		out = append(out, githubredelivery.HookDelivery{ID: d.ID, GUID: d.GUID, StatusCode: *d.StatusCode})
	}
	return out, nextCursor(link), nil
}

// nextCursor is the cursor parameter of a Link header's rel="next" URL ("" for none).
func nextCursor(link string) string {
	target, ok := restkit.NextLink(link)
	if !ok {
		return ""
	}
	u, err := url.Parse(target)
	if err != nil {
		return ""
	}
	return u.Query().Get("cursor")
}

// RequestRedelivery implements githubredelivery.HookDeliveries: POST
// /app/hook/deliveries/{id}/attempts with the App JWT (GitHub answers 202).
func (a *App) RequestRedelivery(ctx context.Context, id int64) error {
	if id <= 0 {
		return fmt.Errorf("github app: delivery id %d", id)
	}
	return a.AppPost(ctx, "/app/hook/deliveries/"+strconv.FormatInt(id, 10)+"/attempts", nil)
}
