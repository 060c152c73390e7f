package slack_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
)

func TestSlack(t *testing.T) { webhooktest.RunSuite(t, "Slack webhook adapter Suite") }
