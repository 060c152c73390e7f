package bootstrap

// The composition root reads a retired variable: reported.
const envGitHubAPIToken = "HEPHAESTUS_GITHUB_API_TOKEN"
