package envs

const EnvOnlyInTests = "HEPHAESTUS_ONLY_IN_TESTS"
