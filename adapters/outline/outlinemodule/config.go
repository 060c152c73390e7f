package outlinemodule

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// EnvAPIURL is the Outline module's one environment variable (docs/configuration.md).
const EnvAPIURL = "HEPHAESTUS_OUTLINE_API_URL"

// Config is the Outline instance configuration (CONTRACT.md "Configuration"), read by
// LoadConfig. Webhooks need none: each connection has its own URL and signing secret.
type Config struct {
	// APIURL is the API root of the one Outline instance the server may call
	// (HEPHAESTUS_OUTLINE_API_URL, https://app.getoutline.com/api; no query or fragment).
	// Only connections whose sourceServerUrl is on that instance are backfilled, each with its
	// own API token. Default: empty, no backfill (its jobs are refused, teardown still runs).
	APIURL string
}

// LoadConfig reads the Outline variable from env and validates it (unset is off, so there is
// no default to fill). Errors: an *envconfig.Error naming the invalid variable.
func LoadConfig(env providerkit.Env) (Config, error) {
	r := envconfig.NewReader(env.Getenv)
	c := Config{APIURL: r.APIRoot(EnvAPIURL)}
	if err := r.Err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Load is Outline's providerkit.Loader: the module with its configuration read from env.
func Load(env providerkit.Env) (providerkit.Module, error) {
	cfg, err := LoadConfig(env)
	if err != nil {
		return nil, err
	}
	return New(cfg), nil
}
