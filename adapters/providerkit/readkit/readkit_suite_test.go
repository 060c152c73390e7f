package readkit_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestReadkit(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Read API kit Suite")
}
