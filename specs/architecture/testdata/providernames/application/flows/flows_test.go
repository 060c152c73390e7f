package flows

// Tests use providers as sample data: not reported.
const sample = "toy"
