package toymodule

// Name is the toy provider's own name, in its own folder: allowed.
const Name = "toy"
