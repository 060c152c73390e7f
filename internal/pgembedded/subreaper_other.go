//go:build !linux

package pgembedded

// AdoptServers is a no-op outside Linux, which has no child subreapers.
func AdoptServers() error { return nil }

// ReapAdopted is a no-op outside Linux.
func ReapAdopted() {}
