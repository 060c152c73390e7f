package bootstrap

// The composition root reads a provider's variable itself: reported.
const envToken = "HEPHAESTUS_TOY_TOKEN"
