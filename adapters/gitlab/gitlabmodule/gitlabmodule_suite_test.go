package gitlabmodule_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestGitLabModule(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "GitLab module Suite")
}
