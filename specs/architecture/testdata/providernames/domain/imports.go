package domain

// An import path on the github.com host names no provider by its host alone.
import _ "github.com/example/library"
