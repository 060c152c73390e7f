package githubmodule

// Config takes the instance-wide token again: the scan must report it.
type Config struct {
	APIURL   string
	APIToken string
}
