package othermodule

// peer names another provider from this provider's folder: reported.
const peer = "TOY"
