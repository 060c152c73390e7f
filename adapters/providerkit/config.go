package providerkit

import "github.com/hephaestus-dev/hephaestus/ports"

// Env is what a provider module reads its configuration from: its own environment variables,
// and the two process settings a provider's rules depend on, already read and validated by
// bootstrap.
type Env struct {
	// Getenv returns a variable's value, "" when unset (os.Getenv in production, a map's
	// lookup in specs).
	Getenv func(name string) string
	// PublicURL is the server's external base URL (HEPHAESTUS_PUBLIC_URL); "" when unset.
	PublicURL string
	// Embedded is true when the server runs its embedded development database (DATABASE_URL
	// unset): only then may a module accept the Makefile's public development secrets.
	Embedded bool
}

// Loader reads one provider module's configuration from env (defaults applied, values
// validated) and makes the module with it; adapters/providers lists one per provider.
// Errors: an *envconfig.Error naming every invalid variable of the module.
type Loader func(env Env) (Module, error)

// Load is the Loader of a module package's LoadConfig and New: adapters/providers lists
// providerkit.Load(<p>module.LoadConfig, <p>module.New).
func Load[C any, M Module](load func(Env) (C, error), build func(C) M) Loader {
	return func(env Env) (Module, error) {
		cfg, err := load(env)
		if err != nil {
			return nil, err
		}
		return build(cfg), nil
	}
}

// WarnIgnored logs, once per name, that a retired variable is set and ignored: the variable's
// name only, never its value.
func WarnIgnored(log ports.Logger, names []string) {
	for _, name := range names {
		log.Warnw("an instance-wide provider token is set and ignored: every provider read uses the credential of the workspace's own connection",
			"variable", name)
	}
}
