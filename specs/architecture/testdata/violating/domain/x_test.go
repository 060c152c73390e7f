package domain

import (
	"testing"

	"github.com/onsi/gomega"
)

var _ = gomega.Expect
var _ testing.T
