package gitlab_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

func TestGitLab(t *testing.T) {
	// Verifying and parsing start no goroutines; a leak would be a bug here. Ginkgo's own
	// interrupt watcher outlives RunSpecs.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
	RegisterFailHandler(Fail)
	RunSpecs(t, "GitLab webhook adapter Suite")
}
