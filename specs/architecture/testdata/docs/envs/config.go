package envs

const (
	EnvDatabaseURL = "DATABASE_URL"
	EnvHTTPAddr    = "HEPHAESTUS_HTTP_ADDR"
	envConsumer    = "HEPHAESTUS_INTEGRATION_CONSUMER_"
	EnvClaimers    = envConsumer + "CLAIMERS"
	EnvNotAVar     = "something else"
	Count          = 3
)
