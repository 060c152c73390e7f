package gitlabsync

import (
	"os"

	"example.com/managementstore"
)

func token() string { return os.Getenv("HEPHAESTUS_GITLAB_API_TOKEN") }

func cred() any { return managementstore.SpecCredential(nil, 1, 1, "x") }
