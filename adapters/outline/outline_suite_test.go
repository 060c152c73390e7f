package outline_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
)

func TestOutline(t *testing.T) { webhooktest.RunSuite(t, "Outline webhook adapter Suite") }
