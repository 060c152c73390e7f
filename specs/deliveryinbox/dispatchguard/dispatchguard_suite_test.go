package dispatchguard_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDispatchGuard(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Dispatch goroutine guard Suite")
}
