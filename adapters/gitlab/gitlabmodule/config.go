package gitlabmodule

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// The GitLab module's environment variables (docs/configuration.md).
const (
	EnvAPIURL = "HEPHAESTUS_GITLAB_API_URL"
	// EnvAPIToken was the instance-wide token of GitLab reads. It is no longer used (every
	// read carries the API token of the workspace's own connection, CONTRACT.md "Provider
	// access"); a server that finds it set says so at start.
	EnvAPIToken = "HEPHAESTUS_GITLAB_API_TOKEN"
)

// Config is the GitLab instance configuration (CONTRACT.md "Configuration"), read by
// LoadConfig. Webhooks need none: each connection has its own URL and token.
type Config struct {
	// APIURL is the REST root of the handlers' reads, the backfills and the subscription
	// checks (HEPHAESTUS_GITLAB_API_URL, https://<host>/api/v4; one instance for every GitLab
	// connection). Every read carries the API token of the workspace's own GITLAB connection
	// (PUT …/connections/{id}/api-token); there is no instance-wide token. Default: empty, no
	// reads, and no GitLab subscription can be verified.
	APIURL string
	// IgnoredVariables names the retired variables that are set (HEPHAESTUS_GITLAB_API_TOKEN):
	// nothing reads their values, and Build warns once. Default: none.
	IgnoredVariables []string
}

// LoadConfig reads the GitLab variables from env and validates each as it is read (every
// setting is off when unset, and no rule joins two of them). Errors: an *envconfig.Error
// naming every invalid variable (then the Config is not to be used).
func LoadConfig(env providerkit.Env) (Config, error) {
	r := envconfig.NewReader(env.Getenv)
	c := Config{APIURL: r.HTTPURL(EnvAPIURL, "")}
	if r.Secret(EnvAPIToken) != "" {
		c.IgnoredVariables = append(c.IgnoredVariables, EnvAPIToken)
	}
	return c, r.Err()
}
