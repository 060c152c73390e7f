package bootstrap

// The one place the retired variables may be named (to warn that they are ignored).
const EnvGitHubAPIToken = "HEPHAESTUS_GITHUB_API_TOKEN"
