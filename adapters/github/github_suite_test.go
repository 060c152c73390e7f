package github_test

import (
	"testing"

	"github.com/hephaestus-dev/hephaestus/adapters/webhookjson/webhooktest"
)

func TestGitHub(t *testing.T) { webhooktest.RunSuite(t, "GitHub webhook adapter Suite") }
