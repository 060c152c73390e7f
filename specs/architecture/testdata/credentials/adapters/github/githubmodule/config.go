package githubmodule

// The one place the retired variable may be named (to warn that it is ignored).
const EnvAPIToken = "HEPHAESTUS_GITHUB_API_TOKEN"
