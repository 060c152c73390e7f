package slackmodule_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSlackModule(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Slack module Suite")
}
