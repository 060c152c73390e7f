package githubmodule

import (
	"regexp"
	"time"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// The GitHub module's environment variables (docs/configuration.md).
const (
	EnvAppID              = "HEPHAESTUS_GITHUB_APP_ID"
	EnvWebhookSecret      = "HEPHAESTUS_GITHUB_WEBHOOK_SECRET"
	EnvAPIURL             = "HEPHAESTUS_GITHUB_API_URL"
	EnvAppPrivateKey      = "HEPHAESTUS_GITHUB_APP_PRIVATE_KEY"
	EnvAppPrivateKeyFile  = "HEPHAESTUS_GITHUB_APP_PRIVATE_KEY_FILE"
	EnvRedeliveryInterval = "HEPHAESTUS_GITHUB_REDELIVERY_INTERVAL"
	EnvOAuthURL           = "HEPHAESTUS_GITHUB_OAUTH_URL"
	EnvAppSlug            = "HEPHAESTUS_GITHUB_APP_SLUG"
	EnvClientID           = "HEPHAESTUS_GITHUB_CLIENT_ID"
	EnvClientSecret       = "HEPHAESTUS_GITHUB_CLIENT_SECRET"
	// EnvAPIToken was the instance-wide token of GitHub reads. It is no longer used (a read
	// for a workspace uses its own connection's credential, CONTRACT.md "Provider access"); a
	// server that finds it set says so at start.
	EnvAPIToken = "HEPHAESTUS_GITHUB_API_TOKEN"
)

// Defaults of the GitHub module (CONTRACT.md "Configuration").
const (
	DefaultAPIURL             = "https://api.github.com"
	DefaultOAuthURL           = "https://github.com"
	DefaultRedeliveryInterval = 10 * time.Minute
)

// DevWebhookSecret is the development webhook secret the Makefile exports for `make run` and
// `make demo`: anyone can sign a delivery with it, so only the embedded development database
// may use it.
const DevWebhookSecret = "dev-github-webhook-secret"

// Config is the GitHub instance configuration (CONTRACT.md "Configuration"), read by
// LoadConfig; New applies the defaults to a Config built in code.
type Config struct {
	// WebhookSecret is the App's webhook secret (HEPHAESTUS_GITHUB_WEBHOOK_SECRET, byte for
	// byte). Default: none, and every delivery is refused as unsigned. With DATABASE_URL set,
	// DevWebhookSecret is refused.
	WebhookSecret []byte
	// AppID is the GitHub App id the receiver accepts (HEPHAESTUS_GITHUB_APP_ID, a whole
	// number ≥ 1). Default: 0, any App.
	AppID int64
	// AppPrivateKey is the App's PEM private key (HEPHAESTUS_GITHUB_APP_PRIVATE_KEY, or the
	// owner-only file HEPHAESTUS_GITHUB_APP_PRIVATE_KEY_FILE names; not both; needs AppID).
	// Default: empty, no App authentication, so only PAT workspaces read GitHub (with their
	// own PAT).
	AppPrivateKey string
	// APIURL is the REST root of provider reads and PAT access checks
	// (HEPHAESTUS_GITHUB_API_URL; GitHub Enterprise Server: https://<host>/api/v3).
	// Default: DefaultAPIURL.
	APIURL string
	// RedeliveryInterval is the redelivery reconciler's period, with App authentication only
	// (HEPHAESTUS_GITHUB_REDELIVERY_INTERVAL). Default: DefaultRedeliveryInterval.
	RedeliveryInterval time.Duration
	// WebURL is GitHub's web and OAuth root (HEPHAESTUS_GITHUB_OAUTH_URL): the source
	// namespace of App installations and the install flow's host. Default: DefaultOAuthURL.
	WebURL string
	// AppSlug is the App's URL name (HEPHAESTUS_GITHUB_APP_SLUG). Default: empty, no install
	// flow.
	AppSlug string
	// ClientID and ClientSecret are the App's OAuth client (HEPHAESTUS_GITHUB_CLIENT_ID,
	// HEPHAESTUS_GITHUB_CLIENT_SECRET; set both). Default: empty, no install flow.
	ClientID, ClientSecret string
	// IgnoredVariables names the retired variables that are set (HEPHAESTUS_GITHUB_API_TOKEN):
	// nothing reads their values, and Build warns once. Default: none.
	IgnoredVariables []string
}

// setDefaults fills what is unset with the documented defaults.
func (c *Config) setDefaults() {
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	if c.WebURL == "" {
		c.WebURL = DefaultOAuthURL
	}
	if c.RedeliveryInterval <= 0 {
		c.RedeliveryInterval = DefaultRedeliveryInterval
	}
}

var appSlugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,99}$`)

// validate reports on r every rule the values break together, skipping variables r already
// refused: the key needs the App id, the Makefile's secret needs the embedded database, the
// install flow needs both halves of its client and a slug GitHub could have made.
func (c Config) validate(r *envconfig.Reader, env providerkit.Env, keyVariable string) {
	if c.AppPrivateKey != "" && c.AppID == 0 && !r.Invalid(EnvAppID) {
		r.Fail(keyVariable, "is set without %s (the JWT's issuer)", EnvAppID)
	}
	if !env.Embedded && string(c.WebhookSecret) == DevWebhookSecret {
		r.Fail(EnvWebhookSecret, "is the public development secret of the Makefile; set the GitHub App's own secret when DATABASE_URL is set")
	}
	r.Pair(EnvClientID, c.ClientID, EnvClientSecret, c.ClientSecret)
	if c.AppSlug != "" && !appSlugPattern.MatchString(c.AppSlug) {
		r.Fail(EnvAppSlug, "%q is not a GitHub App slug", c.AppSlug)
	}
}

// LoadConfig reads the GitHub variables from env, applies the defaults and validates.
// Errors: an *envconfig.Error naming every invalid variable (then the Config is not to be
// used); no message shows a secret.
func LoadConfig(env providerkit.Env) (Config, error) {
	r := envconfig.NewReader(env.Getenv)
	c := Config{
		AppID:              r.WholeNumber(EnvAppID, 0, 1, 0),
		WebhookSecret:      []byte(r.Secret(EnvWebhookSecret)),
		APIURL:             r.HTTPURL(EnvAPIURL, ""),
		RedeliveryInterval: r.Duration(EnvRedeliveryInterval, 0),
		WebURL:             r.HTTPURL(EnvOAuthURL, ""),
		AppSlug:            r.Text(EnvAppSlug, ""),
		ClientID:           r.Text(EnvClientID, ""),
		ClientSecret:       r.Secret(EnvClientSecret),
	}
	key, keyVariable := appKey(r)
	c.AppPrivateKey = key
	if r.Secret(EnvAPIToken) != "" {
		c.IgnoredVariables = append(c.IgnoredVariables, EnvAPIToken)
	}
	c.setDefaults()
	c.validate(r, env, keyVariable)
	return c, r.Err()
}

// appKey reads the App's private key from the variable or the file it names (not both),
// refuses a file that others may read, and checks that it parses; messages never show key
// material. It returns the key and the variable it came from.
func appKey(r *envconfig.Reader) (string, string) {
	_, inline := r.Get(EnvAppPrivateKey)
	pemText := r.Secret(EnvAppPrivateKey)
	path, fromFile := r.Get(EnvAppPrivateKeyFile)
	name := EnvAppPrivateKey
	switch {
	case inline && fromFile:
		r.Fail(EnvAppPrivateKeyFile, "is set together with %s; set one", EnvAppPrivateKey)
		return "", name
	case fromFile:
		name = EnvAppPrivateKeyFile
		if pemText = r.SecretFile(name, path); pemText == "" {
			return "", name
		}
	case !inline:
		return "", name
	}
	if _, err := githubapi.ParseAppPrivateKey([]byte(pemText)); err != nil {
		r.Fail(name, "is not a PEM-encoded RSA private key")
		return "", name
	}
	return pemText, name
}
