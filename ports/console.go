package ports

// ConsoleSession is a live sign-in of the operator console, as the session store reads it for
// the console adapter (which compares the administrator token and the CSRF token itself).
type ConsoleSession struct {
	Principal Principal
	// AdminTokenHash is the SHA-256 of the administrator token a session of it was signed in
	// with (nil for an account's session): the caller compares it with the configured one.
	AdminTokenHash []byte
	// CSRF is the session's token that every form of the console posts back.
	CSRF []byte
}
