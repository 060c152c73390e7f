//go:build !unix

package bootstrap

const lockFile = "hephaestus.lock"

// lockDataDir cannot lock without flock; it always reports the lock as held.
func lockDataDir(string) (unlock func(), held bool, err error) { return func() {}, true, nil }
