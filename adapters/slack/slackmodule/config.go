package slackmodule

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// The Slack module's environment variables (docs/configuration.md).
const (
	EnvSigningSecret = "HEPHAESTUS_SLACK_SIGNING_SECRET"
	EnvAPIURL        = "HEPHAESTUS_SLACK_API_URL"
	EnvBotToken      = "HEPHAESTUS_SLACK_BOT_TOKEN"
	EnvClientID      = "HEPHAESTUS_SLACK_CLIENT_ID"
	EnvClientSecret  = "HEPHAESTUS_SLACK_CLIENT_SECRET"
)

// DefaultAPIURL is the Slack Web API root when HEPHAESTUS_SLACK_API_URL is unset.
const DefaultAPIURL = "https://slack.com/api/"

// DevSigningSecret is the development signing secret the Makefile exports for `make run` and
// `make demo`: anyone can sign a delivery with it, so only the embedded development database
// may use it.
const DevSigningSecret = "dev-slack-signing-secret"

// Config is the Slack instance configuration (CONTRACT.md "Configuration"), read by
// LoadConfig; New applies the defaults to a Config built in code.
type Config struct {
	// SigningSecret is the app's signing secret (HEPHAESTUS_SLACK_SIGNING_SECRET, byte for
	// byte). Default: none, and every delivery is refused as unsigned. With DATABASE_URL set,
	// DevSigningSecret is refused.
	SigningSecret []byte
	// APIURL is the Web API root (HEPHAESTUS_SLACK_API_URL). Default: DefaultAPIURL.
	APIURL string
	// BotToken (HEPHAESTUS_SLACK_BOT_TOKEN) is only the fallback of the join notice and App
	// Home views for a connection that stores no bot token of its own; never used for a read.
	// Default: empty, such a team gets no Web API call.
	BotToken string
	// ClientID and ClientSecret are the Slack app's OAuth client (HEPHAESTUS_SLACK_CLIENT_ID,
	// HEPHAESTUS_SLACK_CLIENT_SECRET; set both). Default: empty, no install flow.
	ClientID, ClientSecret string
	// PublicURL is the server's external base URL (HEPHAESTUS_PUBLIC_URL, a process setting
	// bootstrap reads: providerkit.Env), which names the install flow's redirect_uri.
	// Default: empty, Slack links carry no redirect_uri.
	PublicURL string
}

// setDefaults fills what is unset with the documented defaults.
func (c *Config) setDefaults() {
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
}

// validate reports on r every rule the values break together: the Makefile's secret needs the
// embedded database, the install flow needs both halves of its client.
func (c Config) validate(r *envconfig.Reader, env providerkit.Env) {
	if !env.Embedded && string(c.SigningSecret) == DevSigningSecret {
		r.Fail(EnvSigningSecret, "is the public development secret of the Makefile; set the Slack app's own signing secret when DATABASE_URL is set")
	}
	r.Pair(EnvClientID, c.ClientID, EnvClientSecret, c.ClientSecret)
}

// LoadConfig reads the Slack variables from env, applies the defaults and validates.
// Errors: an *envconfig.Error naming every invalid variable (then the Config is not to be
// used); no message shows a secret.
func LoadConfig(env providerkit.Env) (Config, error) {
	r := envconfig.NewReader(env.Getenv)
	c := Config{
		SigningSecret: []byte(r.Secret(EnvSigningSecret)),
		APIURL:        r.HTTPURL(EnvAPIURL, ""),
		BotToken:      r.Secret(EnvBotToken),
		ClientID:      r.Text(EnvClientID, ""),
		ClientSecret:  r.Secret(EnvClientSecret),
		PublicURL:     env.PublicURL,
	}
	c.setDefaults()
	c.validate(r, env)
	return c, r.Err()
}
