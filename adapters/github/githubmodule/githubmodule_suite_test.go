package githubmodule_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestGitHubModule(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "GitHub module Suite")
}
