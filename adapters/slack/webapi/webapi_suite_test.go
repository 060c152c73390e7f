package webapi_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.uber.org/goleak"
)

func TestWebAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	leaks := goleak.IgnoreCurrent()
	RunSpecs(t, "Slack Web API adapter")
	goleak.VerifyNone(t, leaks,
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}
