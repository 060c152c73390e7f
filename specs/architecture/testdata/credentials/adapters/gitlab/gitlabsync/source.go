package gitlabsync

import (
	"os"

	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

func token() string { return os.Getenv("HEPHAESTUS_GITLAB_API_TOKEN") }

func cred() any { return credential.SpecCredential(nil, 1, 1, "x") }
