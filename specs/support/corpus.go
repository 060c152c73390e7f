package support

import (
	"os"

	"github.com/onsi/ginkgo/v2"

	"github.com/hephaestus-dev/hephaestus/specs/ghcorpus"
)

// GitHubCorpus is the folder of GitHub's documented example payloads (specs/ghcorpus:
// the pinned package that `make test` fetches into .cache/corpus/github first). Without it a
// spec fails under CI, where `make test` must have fetched it, and is skipped elsewhere with
// the command that fetches it.
func GitHubCorpus() string {
	ginkgo.GinkgoHelper()
	dir, err := ghcorpus.Require()
	if err != nil {
		if os.Getenv("CI") != "" {
			ginkgo.Fail(err.Error())
		}
		ginkgo.Skip(err.Error())
	}
	return dir
}
