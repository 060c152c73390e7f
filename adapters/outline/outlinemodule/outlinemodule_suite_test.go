package outlinemodule_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestOutlineModule(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Outline module Suite")
}
