// Command corpus brings GitHub's documented example webhook payloads (the pinned
// @octokit/webhooks-examples package, checksum checked) into .cache/corpus/github, or the
// folder named by $HEPHAESTUS_GITHUB_CORPUS, for the specs and the bench. `make corpus` runs
// it; `make test`, `make bench` and `make soak` run that first. A folder that already holds the
// pinned version is left as it is.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hephaestus-dev/hephaestus/specs/ghcorpus"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := ghcorpus.Dir()
	if err := ghcorpus.Ensure(ctx, dir, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "corpus:", err)
		os.Exit(1)
	}
}
