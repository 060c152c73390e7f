package outlineapi_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	// Every spec closes its server and its transport's idle connections, so no connection
	// goroutine may outlive the suite. Ginkgo's own interrupt watcher does.
	leaks := goleak.IgnoreCurrent()
	RunSpecs(t, "Outline API adapter")
	goleak.VerifyNone(t, leaks,
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}
