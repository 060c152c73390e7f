package githubapi

import "github.com/hephaestus-dev/hephaestus/ports/credential"

// A provider client that mints credentials of its own instead of asking the connection store.
var issuer credential.Issuer = credential.ClaimIssuer()

func forge(token string) credential.Credential { return issuer.IssueInstallation(1, 1, 1, token) }
