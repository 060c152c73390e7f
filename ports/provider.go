package ports

import (
	"context"
)

// Runner is a background loop the service starts after the HTTP server and stops after it. Run
// returns when ctx is cancelled, after releasing what it holds; an error before that means the
// loop failed.
type Runner interface {
	Run(ctx context.Context) error
}
